"""Layer 5: inspecting studies for people: report, dashboard, compare, sensitivity, status.
Imports only the layers below."""
