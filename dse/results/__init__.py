"""Layer 4: study records (trials and front files) and search quality (hypervolume, IGD+).
Imports only the layers below (spec, model, search)."""
