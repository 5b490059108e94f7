"""The bad-input corpus: files that are not what they claim to be, through the real CLI.

Every case is one broken input beside an otherwise valid spec (tests/cli/test_bad_spec_corpus's
``GOOD``): a user preset file (``presets/`` beside the spec, or ``$DSE_PRESETS``) that is a YAML
bomb, too deep, not UTF-8, holds a NUL, repeats a key, or is not a regular file; a spec path that
is a device, a FIFO, a folder or a symlink loop. ``dse validate`` and ``dse run`` must answer with
one line naming the file that is wrong (and its line where it has one), exit 2, no traceback,
and create nothing. The bulk runs through the entry point in this process; a sample of each
class runs as real processes.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from dse.spec.safe_yaml import MAX_FILE_BYTES
from tests.cli.inprocess import run_in_process
from tests.cli.test_bad_spec_corpus import (
    BOMB,
    FILES,
    FOLDERS,
    GOOD,
    Outcome,
    _listing,
    _run_process_env,
)

DEEP = "x: " + "[" * 3000 + "]" * 3000 + "\n"
TOO_BIG = b"# padding\n" * (MAX_FILE_BYTES // 10 + 1)
#: Merge keys (<<) repeating a mapping ten times a level: a bomb without sequences.
MERGE_BOMB = (
    "a0: &a0 {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1, k9: 1}\n"
    + "".join(
        f"a{i}: &a{i} {{" + ", ".join(f"m{j}: *a{i - 1}" for j in range(10)) + "}\n"
        for i in range(1, 8)
    )
)
#: Block-style (indented) nesting, 200 levels.
BLOCK_DEEP = "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n"


@dataclass(frozen=True)
class InputCase:
    """``files`` are written into the case's folder (``spec.yaml`` is ``GOOD`` unless given);
    ``fifos`` and ``links`` (name -> target) are made there. ``file`` is the file the message
    must name: ``{dir}`` is the case's folder, resolved (how preset folders are reported)."""

    name: str
    file: str
    line: int | None
    fragment: str
    field: str = ""
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)
    fifos: tuple[str, ...] = ()
    links: dict[str, str] = dataclasses.field(default_factory=dict)
    arg: str = "spec.yaml"
    presets_env: str | None = None  # $DSE_PRESETS, with {dir}


def preset(name: str, body: bytes | str, line: int | None, fragment: str, **kw) -> InputCase:
    """A user preset file beside the spec (``presets/gpus.yaml`` unless ``at`` says)."""
    at = kw.pop("at", "presets/gpus.yaml")
    data = body.encode() if isinstance(body, str) else body
    return InputCase(name, f"{{dir}}/{at}", line, fragment, files={at: data}, **kw)


def env_preset(name: str, body: bytes | str, line: int | None, fragment: str, **kw) -> InputCase:
    """The same in a ``$DSE_PRESETS`` folder."""
    at = kw.pop("at", "envpresets/models.yaml")
    data = body.encode() if isinstance(body, str) else body
    return InputCase(
        name,
        f"{{dir}}/{at}",
        line,
        fragment,
        files={at: data},
        presets_env="{dir}/envpresets",
        **kw,
    )


def spec_bytes(name: str, data: bytes, line: int | None, fragment: str) -> InputCase:
    return InputCase(name, "spec.yaml", line, fragment, files={"spec.yaml": data})


def spec_path(name: str, arg: str, fragment: str, **kw) -> InputCase:
    """The spec argument is ``arg``, which is not a readable regular file."""
    return InputCase(name, kw.pop("file", arg), None, fragment, arg=arg, **kw)


_GOOD = GOOD.encode()
_END = GOOD.count("\n") + 1  # a line added after the last


def _at(text: str) -> int:
    """The line of GOOD where ``text`` first occurs."""
    return GOOD[: GOOD.index(text)].count("\n") + 1


#: GOOD with ``bad`` put inside the description's text, on line 2.
_IN_LINE_2 = _GOOD.replace(b"every case", b"every \x00 case", 1)

CASES: list[InputCase] = [
    # --- user presets beside the spec -----------------------------------------------------------
    preset("preset_duplicate_name", "my:\n  description: a\nmy:\n  description: b\n", 3, "dup"),
    preset(
        "preset_duplicate_field",
        "my:\n  description: a\n  cooling: air\n  cooling: liquid\n",
        4,
        "duplicate key 'cooling'",
        field="my.cooling",
    ),
    preset("preset_billion_laughs", BOMB, 6, "once aliases are expanded"),
    preset("preset_deep_nesting", DEEP, 1, "nested deeper than 50 levels"),
    preset("preset_recursive_alias", "x: &a [1, *a]\n", 1, "recursive alias"),
    preset("preset_latin1", b"my:\n  description: caf\xe9\n", 2, "not UTF-8 text: byte 0xe9"),
    preset("preset_utf16", "my: {description: a}\n".encode("utf-16"), 1, "not UTF-8 text"),
    preset("preset_nul", b"my:\n  description: a\x00b\n", 2, "a NUL byte is not allowed"),
    preset("preset_control_char", b"my:\n\n  description: \x07\n", 3, "U+0007"),
    preset("preset_tab_indent", "my:\n\tdescription: a\n", 2, "invalid YAML"),
    preset("preset_python_tag", "my: !!python/object/apply:os.system ['true']\n", 1, "invalid"),
    preset("preset_top_level_list", "- a\n- b\n", 1, "expected a mapping of presets"),
    preset(
        "preset_integer_name",
        "5:\n  description: five\n  die_area_mm2: {value: 500, unit: mm2, source: x}\n",
        1,
        "a name must be text, not int 5",
    ),
    preset(
        "preset_bool_name", "true:\n  description: yes\n", 1, "not bool", at="presets/models.yaml"
    ),
    preset(
        "preset_integer_node",
        "nodes:\n  7:\n    x: 1\n",
        2,
        "a name must be text, not int 7",
        at="presets/technology.yaml",
    ),
    preset("preset_too_big", TOO_BIG, None, f"larger than {MAX_FILE_BYTES:,} bytes"),
    preset("preset_models_bomb", BOMB, 6, "once aliases are expanded", at="presets/models.yaml"),
    preset(
        "preset_technology_dup", "nodes: {}\nnodes: {}\n", 2, "dup", at="presets/technology.yaml"
    ),
    preset(  # one line naming every missing field, not a line per field
        "preset_missing_fields",
        "my:\n  description: written from scratch\n",
        1,
        "missing 9 fields every GPU preset sets: die_area_mm2, hbm_stacks_per_die",
        field="my",
    ),
    preset(
        "preset_technology_fragment_nul",
        b"common:\n  x: \x00\n",
        2,
        "NUL",
        at="presets/technology/extra.yaml",
    ),
    InputCase(
        "preset_is_a_folder",
        "{dir}/presets/gpus.yaml",
        None,
        "is a folder",
        files={"presets/gpus.yaml/x": b""},
    ),
    InputCase(
        "preset_is_a_fifo",
        "{dir}/presets/gpus.yaml",
        None,
        "is a FIFO",
        files={"presets/k": b""},
        fifos=("presets/gpus.yaml",),
    ),
    InputCase(
        "preset_links_to_dev_zero",
        "{dir}/presets/gpus.yaml",
        None,
        "is a character device",
        files={"presets/k": b""},
        links={"presets/gpus.yaml": "/dev/zero"},
    ),
    InputCase(
        "preset_symlink_loop",
        "{dir}/presets/models.yaml",
        None,
        "cannot read: Too many levels of symbolic links",
        files={"presets/k": b""},
        links={"presets/models.yaml": "models.yaml"},
    ),
    InputCase(
        "preset_dangling_link",
        "{dir}/presets/gpus.yaml",
        None,
        "file not found",
        files={"presets/k": b""},
        links={"presets/gpus.yaml": "gone.yaml"},
    ),
    # --- user presets in $DSE_PRESETS -----------------------------------------------------------
    env_preset("env_preset_bomb", BOMB, 6, "once aliases are expanded"),
    env_preset("env_preset_deep", DEEP, 1, "nested deeper"),
    env_preset("env_preset_duplicate", "m:\n  layers: 1\n  layers: 2\n", 3, "duplicate key"),
    env_preset("env_preset_not_utf8", b"m:\n  x: 1\n  y: \xff\n", 3, "byte 0xff at column 6"),
    env_preset("env_preset_nul", b"m: {x: 1}\n\x00\n", 2, "NUL"),
    InputCase(
        "env_presets_missing_folder",
        "{dir}/nowhere",
        None,
        "$DSE_PRESETS names it, but it does not exist",
        presets_env="{dir}/nowhere",
    ),
    InputCase(
        "env_presets_is_a_file",
        "{dir}/notes.txt",
        None,
        "$DSE_PRESETS names it, but it is not a folder",
        presets_env="{dir}/notes.txt",
    ),
    InputCase(
        "env_preset_fifo",
        "{dir}/envpresets/gpus.yaml",
        None,
        "is a FIFO",
        files={"envpresets/k": b""},
        fifos=("envpresets/gpus.yaml",),
        presets_env="{dir}/envpresets",
    ),
    # --- specs that are not (readable, regular, UTF-8) files ------------------------------------
    spec_path("spec_dev_zero", "/dev/zero", "is a character device, not a regular file"),
    spec_path("spec_dev_null", "/dev/null", "is a character device"),
    spec_path("spec_fifo", "pipe.yaml", "is a FIFO (named pipe)", fifos=("pipe.yaml",)),
    spec_path("spec_folder", "afolder", "is a folder"),
    spec_path("spec_dot", ".", "is a folder"),
    spec_path("spec_missing", "nope.yaml", "file not found"),
    spec_path("spec_dangling_link", "gone.yaml", "file not found", links={"gone.yaml": "x.yaml"}),
    spec_path(
        "spec_symlink_loop",
        "loop.yaml",
        "cannot read: Too many levels of symbolic links",
        links={"loop.yaml": "loop.yaml"},
    ),
    spec_path(
        "spec_links_to_dev_zero", "z.yaml", "character device", links={"z.yaml": "/dev/zero"}
    ),
    spec_path("spec_under_a_file", "notes.txt/spec.yaml", "cannot read: Not a directory"),
    spec_bytes(  # some other YAML file: one line, not a line per unknown key
        "spec_is_another_yaml",
        b"name: my-package\nversion: 3\ndependencies: [a, b]\n",
        1,
        "not a study spec: none of its 3 top-level keys (name, version, dependencies)",
    ),
    spec_bytes("spec_too_big", _GOOD + TOO_BIG, None, f"larger than {MAX_FILE_BYTES:,} bytes"),
    spec_bytes("spec_latin1", _GOOD.replace(b"every case", b"caf\xe9 case"), 2, "byte 0xe9"),
    spec_bytes("spec_utf16", GOOD.encode("utf-16"), 1, "not UTF-8 text"),
    spec_bytes("spec_cp1252_quote", _GOOD.replace(b"corpus\n", b"\x93corpus\x94\n", 1), 1, "0x93"),
    spec_bytes("spec_nul", _IN_LINE_2, 2, "a NUL byte is not allowed in YAML"),
    spec_bytes("spec_nul_at_end", _GOOD + b"\x00", _END, "NUL"),
    spec_bytes("spec_escape_char", _GOOD.replace(b"64}", b"64}\x1b", 1), _at("64}"), "U+001B"),
    spec_bytes(
        "spec_bell_in_key", _GOOD.replace(b"  gpu:", b"  g\x07pu:", 1), _at("gpu:"), "U+0007"
    ),
    spec_bytes("spec_truncated_utf8", _GOOD + "# \u00e9".encode()[:-1], _END, "not UTF-8"),
    # --- round 3: the same classes, other examples ----------------------------------------------
    preset("preset_merge_key_bomb", MERGE_BOMB, 5, "once aliases are expanded"),
    preset("preset_block_style_deep", BLOCK_DEEP, 51, "nested deeper than 50 levels"),
    preset(
        "preset_flow_mapping_deep", "x: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n", 1, "deeper"
    ),
    preset(
        "preset_two_documents", "my: {description: a}\n---\nb: {description: b}\n", 2, "document"
    ),
    preset("preset_undefined_alias", "my: *nope\n", 1, "undefined alias"),
    preset("preset_duplicate_in_flow", "my: {description: a, description: b}\n", 1, "duplicate"),
    preset("preset_unhashable_key", "{[a]: 1}\n", 1, "unhashable key"),
    preset("preset_noncharacter", "my: {description: \ufffe}\n", 1, "U+FFFE"),
    preset("preset_bom_then_duplicate", b"\xef\xbb\xbfmy: {}\nmy: {}\n", 2, "duplicate key"),
    preset("preset_cr_line_ends", b"my: {description: a}\rmy: {description: b}\r", 2, "duplicate"),
    preset("preset_cp1252", b"my: {description: \x93quoted\x94}\n", 1, "byte 0x93"),
    preset("preset_nul_in_key", b"m\x00y: {}\n", 1, "NUL"),
    InputCase(
        "preset_links_to_proc_mem",
        "{dir}/presets/gpus.yaml",
        None,
        "cannot read: Input/output error",
        files={"presets/k": b""},
        links={"presets/gpus.yaml": "/proc/self/mem"},
    ),
    InputCase(
        "preset_links_to_a_folder",
        "{dir}/presets/models.yaml",
        None,
        "is a folder",
        files={"presets/k": b""},
        links={"presets/models.yaml": "../afolder"},
    ),
    InputCase(
        "env_presets_symlink_loop",
        "{dir}/loop",
        None,
        "$DSE_PRESETS names it, but Symlink loop",
        links={"loop": "loop"},
        presets_env="{dir}/loop",
    ),
    InputCase(
        "env_presets_unknown_user",
        "~no-such-user-h26/presets",
        None,
        "$DSE_PRESETS names it, but",
        presets_env="~no-such-user-h26/presets",
    ),
    InputCase(
        "env_presets_second_entry_missing",
        "{dir}/gone",
        None,
        "does not exist",
        files={"envpresets/k": b""},
        presets_env="{dir}/envpresets" + os.pathsep + "{dir}/gone",
    ),
    spec_path("spec_proc_mem", "/proc/self/mem", "cannot read: Input/output error"),
    InputCase("spec_proc_environ", "/proc/self/environ", 1, "NUL", arg="/proc/self/environ"),
    spec_path(
        "spec_two_link_loop",
        "a.yaml",
        "Too many levels",
        links={"a.yaml": "b.yaml", "b.yaml": "a.yaml"},
    ),
    spec_path("spec_link_to_folder", "d.yaml", "is a folder", links={"d.yaml": "afolder"}),
    spec_path("spec_empty_argument", "", "is a folder", file="."),
    spec_path("spec_name_too_long", "x" * 300 + ".yaml", "cannot read: File name too long"),
    spec_bytes("spec_two_documents", _GOOD + b"---\nstudy: b\n", _END, "another document"),
    spec_bytes("spec_unhashable_key", _GOOD + b"? [a]\n: 2\n", _END, "unhashable key"),
    spec_bytes(
        "spec_noncharacter", _GOOD.replace(b"every case", "every \uffff".encode()), 2, "U+FFFF"
    ),
    spec_bytes("spec_merge_key_bomb", MERGE_BOMB.encode() + _GOOD, 5, "once aliases are expanded"),
]


# --- evaluators whose answers or attributes break the contract -----------------------------------
_MINE = "mine: corpus_eval:f"
_MINE_LINE = GOOD[: GOOD.index(_MINE)].count("\n") + 1


def evaluator(
    name: str, body: str, fragment: str, *, attrs: str = "", spec: str = GOOD
) -> InputCase:
    """A spec's own evaluator ``mine`` whose function is ``body``: refused at its place in
    the spec, naming it. Each case has its own module (the bulk runs in one process)."""
    module = f"ev_{name}"
    text = (
        "import datetime\nimport math\nimport os\n\nimport numpy as np\n\n\n"
        f"def f(design):\n    {body}\n\n\n{attrs}\n"
    )
    return InputCase(
        name,
        "spec.yaml",
        _MINE_LINE,
        fragment,
        field="evaluators.mine",
        files={
            f"{module}.py": text.encode(),
            "spec.yaml": spec.replace(_MINE, f"mine: {module}:f").encode(),
        },
    )


_X = 'x = np.asarray(design["die_area_mm2"])'
_TIMEOUT_1 = GOOD.replace("seed: 0,", "seed: 0, trial_timeout_s: 1,")

EVALUATOR_CASES: list[InputCase] = [
    evaluator("returns_str", "return 'abc'", "returned str 'abc', expected a mapping"),
    evaluator("returns_none", "return None", "returned NoneType"),
    evaluator("returns_list", "return [1.0]", "returned list"),
    evaluator("returns_number", "return 5.0", "returned float"),
    evaluator("returns_generator", "yield {'x': 1.0}", "returned generator"),
    evaluator("returns_set", "return {'x'}", "returned set"),
    evaluator("key_int", "return {1: 1.0}", "metric name 1 (int; metric names are strings)"),
    evaluator("key_tuple", "return {('a',): 1.0}", "metric name ('a',) (tuple"),
    evaluator("key_dotted", "return {'a.b': 1.0}", "metric name 'a.b' (metric names are"),
    evaluator("key_empty", "return {'': 1.0}", "metric name ''"),
    evaluator("key_blank", "return {' a': 1.0}", "metric name ' a'"),
    evaluator("value_dict", "return {'x': {'y': 1.0}}", "metric 'x' that is dict"),
    evaluator("value_list", "return {'x': [1.0, 2.0]}", "metric 'x' that is list"),
    evaluator("value_str", "return {'x': '1.5'}", "metric 'x' that is str '1.5'"),
    evaluator("value_none", "return {'x': None}", "that is NoneType None, expected a real"),
    evaluator("value_complex", "return {'x': 1 + 2j}", "complex number (1+2j)"),
    evaluator("value_np_complex", "return {'x': np.complex128(1)}", "complex number"),
    evaluator("value_complex_array", "return {'x': np.array(1j)}", "array of complex128"),
    evaluator("value_overflow", "return {'x': 10**400}", "which does not fit a float"),
    evaluator("value_str_array", "return {'x': np.array('a')}", "array of <U1"),
    evaluator("value_date", "return {'x': datetime.date(2025, 1, 1)}", "that is date"),
    evaluator("value_datetime64", "return {'x': np.datetime64('2025')}", "is datetime64"),
    evaluator("scalar_returns_array", "return {'x': np.zeros(3)}", "shape (3,), expected ()"),
    evaluator(
        "vectorized_wrong_batch_shape",
        f"{_X}; return {{'x': x if x.ndim == 0 else x[:1]}}",
        "shape (1,), expected (2,) (the batch's) or a single number on a batch of two",
        attrs="f.vectorized = True",
    ),
    evaluator(
        "vectorized_extra_axis",
        f"{_X}; return {{'x': x[..., None] * np.ones(3)}}",
        "shape (3,), expected ()",
        attrs="f.vectorized = True",
    ),
    evaluator(
        "vectorized_batch_transposed",
        f"{_X}; return {{'x': x if x.ndim == 0 else np.ones((3, x.size))}}",
        "shape (3, 2)",
        attrs="f.vectorized = True",
    ),
    evaluator(
        "declared_returns_str",
        "return 'x'",
        "returned str",
        attrs="f.metrics = {'x': ('1', 'a number')}",
    ),
    evaluator(
        "metrics_not_mapping", "return {'x': 1.0}", "'metrics' must map", attrs="f.metrics = 3"
    ),
    evaluator(
        "metrics_unit_only",
        "return {'x': 1.0}",
        "'metrics'['x'] must be (unit, meaning) strings",
        attrs="f.metrics = {'x': 'usd'}",
    ),
    evaluator(
        "metrics_dotted_name",
        "return {'x': 1.0}",
        "'metrics' has metric name 'a.b'",
        attrs="f.metrics = {'a.b': ('1', 'm')}",
    ),
    evaluator(
        "params_number", "return {'x': 1.0}", "'params' must be a list", attrs="f.params = 5"
    ),
    evaluator(
        "params_string", "return {'x': 1.0}", "'params' must be a list", attrs="f.params = 'ab'"
    ),
    evaluator(
        "params_not_names", "return {'x': 1.0}", "design keys (strings)", attrs="f.params = [1]"
    ),
    evaluator(
        "vectorized_not_bool",
        "return {'x': 1.0}",
        "'vectorized' must be True or False, got str 'yes'",
        attrs="f.vectorized = 'yes'",
    ),
    evaluator(
        "resolve_not_callable",
        "return {'x': 1.0}",
        "'resolve' must be a function",
        attrs="f.resolve = 3",
    ),
    evaluator(
        "check_value_not_callable",
        "return {'x': 1.0}",
        "'check_value' must be a function",
        attrs="f.check_value = 'no'",
    ),
    evaluator("raises", "raise KeyError('weight')", "raised KeyError"),
    evaluator("exits", "raise SystemExit(3)", "raised SystemExit"),
    evaluator("kills_its_process", "os._exit(3)", "called os._exit(3)"),
    # --- round 3: the same classes, other examples ----------------------------------------------
    evaluator("returns_bytes", "return b'x'", "returned bytes b'x', expected a mapping"),
    evaluator("returns_pairs", "return (('x', 1.0),)", "returned tuple"),
    evaluator("returns_empty_mapping", "return {}", "returned an empty mapping"),
    evaluator("key_bytes", "return {b'x': 1.0}", "metric name b'x' (bytes"),
    evaluator("key_newline", "return {'a\\nb': 1.0}", "metric name 'a\\nb' (metric names are"),
    evaluator("key_nul", "return {'a\\x00': 1.0}", "printable"),
    evaluator("key_tab_inside", "return {'a\\tb': 1.0}", "printable"),
    evaluator("key_too_long", "return {'k' * 1000: 1.0}", "of 1,000 characters (at most 200)"),
    evaluator("value_bytes", "return {'x': b'1'}", "metric 'x' that is bytes"),
    evaluator("value_decimal", "import decimal; return {'x': decimal.Decimal(1)}", "is Decimal"),
    evaluator(
        "value_fraction_overflow",
        "import fractions; return {'x': fractions.Fraction(10**400, 3)}",
        "which does not fit a float",
    ),
    evaluator(
        "value_longdouble_overflow", "return {'x': np.longdouble('1e4000')}", "beyond 1e308"
    ),
    evaluator(
        "value_longdouble_array_overflow",
        "return {'x': np.array(np.longdouble('1e4000'))}",
        "beyond what a float holds",
    ),
    evaluator("value_object_array", "return {'x': np.array(1.0, dtype=object)}", "of object"),
    evaluator("value_record_array", "return {'x': np.zeros((), dtype=[('a', 'f8')])}", "array of"),
    evaluator("value_timedelta64", "return {'x': np.timedelta64(1, 's')}", "timedelta64"),
    evaluator("value_empty_array", "return {'x': np.zeros(0)}", "shape (0,)"),
    evaluator("value_matrix", "return {'x': np.matrix([[1.0]])}", "shape (1, 1)"),
    evaluator("value_none_among_good", "return {'x': 1.0, 'y': None}", "metric 'y' that is"),
    evaluator(
        "vectorized_object_array",
        f"{_X}; return {{'x': np.atleast_1d(x).astype(object)}}",
        "array of object",
        attrs="f.vectorized = True",
    ),
    evaluator(
        "vectorized_column",
        f"{_X}; return {{'x': np.atleast_1d(x)[:, None]}}",
        "shape (1, 1)",
        attrs="f.vectorized = True",
    ),
    evaluator(
        "metrics_items_raise",
        "return {'x': 1.0}",
        "reading its hooks raised RuntimeError",
        attrs="class M(dict):\n    def items(self):\n        raise RuntimeError('no')\n\n\n"
        "f.metrics = M(x=('1', 'm'))",
    ),
    evaluator(
        "hook_property_raises",
        "return {'x': 1.0}",
        "reading its hooks raised RuntimeError",
        attrs="class C:\n    def __call__(self, d):\n        return {'x': 1.0}\n\n"
        "    @property\n    def metrics(self):\n        raise RuntimeError('no')\n\n\nf = C()",
    ),
    evaluator(
        "params_generator",
        "return {'x': 1.0}",
        "'params' must be a list of design keys, got generator",
        attrs="f.params = (p for p in ['weight'])",
    ),
    evaluator(
        "params_endless",
        "return {'x': 1.0}",
        "'params' must be a list of design keys, got count",
        attrs="import itertools\n\nf.params = itertools.count()",
    ),
    evaluator(
        "resolve_raises",
        "return {'x': 1.0}",
        "its 'resolve' hook raised RuntimeError: licence",
        attrs="def _resolve(fixed):\n    raise RuntimeError('licence')\n\n\nf.resolve = _resolve",
    ),
    evaluator(
        "resolve_returns_none",
        "return {'x': 1.0}",
        "its 'resolve' hook returned NoneType",
        attrs="f.resolve = lambda fixed: None",
    ),
    evaluator("raises_keyboard_interrupt", "raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    evaluator("raises_generator_exit", "raise GeneratorExit", "raised GeneratorExit"),
    evaluator(
        "raises_own_base_exception",
        "raise type('Stop', (BaseException,), {})('x')",
        "raised Stop: x",
    ),
    evaluator("raises_recursion", "return f(design)", "raised RecursionError"),
    evaluator("exits_zero", "raise SystemExit(0)", "raised SystemExit: 0"),
    evaluator("exits_with_text", "raise SystemExit('bye')", "raised SystemExit: bye"),
    evaluator("kills_its_process_with_0", "os._exit(0)", "called os._exit(0)"),
    evaluator("killed_by_sigkill", "import signal; os.kill(os.getpid(), signal.SIGKILL)", "-9"),
    evaluator(
        "hangs_in_c",
        "import time; time.sleep(10**6)",
        "timed out after 1 s (search.trial_timeout_s)",
        spec=_TIMEOUT_1,
    ),
    evaluator(
        "hangs_iterating_its_answer",
        "import collections.abc as c, itertools\n"
        "    class M(c.Mapping):\n"
        "        def __getitem__(s, k): return 1.0\n"
        "        def __iter__(s): return (f'k{i}' for i in itertools.count())\n"
        "        def __len__(s): return 1\n"
        "    return M()",
        "timed out after 1 s",
        spec=_TIMEOUT_1,
    ),
    evaluator(
        "hangs",
        "return {'x': float(sum(range(10**13)))}",
        "timed out after 1 s (search.trial_timeout_s)",
        spec=_TIMEOUT_1,
    ),
]
CASES += EVALUATOR_CASES


def _prepare(case: InputCase, base: Path) -> Path:
    folder = base / case.name
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    for name in FOLDERS:
        (folder / name).mkdir()
    (folder / "spec.yaml").write_bytes(case.files.get("spec.yaml", _GOOD))
    for name, data in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for name in case.fifos:
        os.mkfifo(folder / name)
    for name, target in case.links.items():
        (folder / name).symlink_to(target)
    return folder


def _env(case: InputCase, folder: Path) -> dict[str, str | None]:
    here = str(folder.resolve())
    presets = case.presets_env.replace("{dir}", here) if case.presets_env else None
    return {"DSE_STUDIES_DIR": str(folder / "studies"), "DSE_PRESETS": presets}


def _assert_refused(case: InputCase, folder: Path, out: Outcome) -> None:
    shown = out.stderr[-3000:]
    assert out.returncode == 2, (out.returncode, shown)
    assert "Traceback" not in out.stderr, shown
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, shown
    file = case.file.replace("{dir}", str(folder.resolve()))
    where = f"{file}:{case.line}:" if case.line else f"{file}: "
    where += f" {case.field}:" if case.field else ""
    assert lines[0].startswith(where), (where, shown)
    assert case.fragment in lines[0], (case.fragment, shown)
    assert len(lines[0]) < 1000, len(lines[0])
    assert out.created == [], out.created


def _in_process(case: InputCase, folder: Path, *args: str) -> Outcome:
    before = _listing(folder)
    res = run_in_process(*args, cwd=folder, env=_env(case, folder))
    return Outcome(res.returncode, res.stderr, sorted(_listing(folder) - before))


def test_the_corpus_covers_each_class() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 130
    kinds = {c.name.split("_")[0] for c in CASES}
    assert {"preset", "env", "spec"} <= kinds
    assert len(EVALUATOR_CASES) >= 70


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_refused_in_one_line_naming_the_file(
    tmp_path: Path, case: InputCase, command: str
) -> None:
    folder = _prepare(case, tmp_path)
    _assert_refused(case, folder, _in_process(case, folder, command, case.arg))


#: One real process per kind of breakage: preset bombs and depth, a preset that is a FIFO, a
#: spec that is a device, a spec that is not UTF-8.
PROCESS_SAMPLE = [
    c
    for c in CASES
    if c.name
    in {
        "preset_billion_laughs",
        "env_preset_deep",
        "preset_is_a_fifo",
        "spec_dev_zero",
        "spec_symlink_loop",
        "spec_nul",
        "returns_generator",
        "value_overflow",
        "vectorized_wrong_batch_shape",
        "params_number",
        "preset_merge_key_bomb",
        "spec_proc_mem",
        "returns_empty_mapping",
        "metrics_items_raise",
        "resolve_raises",
    }
]


@pytest.mark.parametrize("case", PROCESS_SAMPLE, ids=lambda c: c.name)
def test_a_real_process_refuses_the_same_way(tmp_path: Path, case: InputCase) -> None:
    folder = _prepare(case, tmp_path)
    before = _listing(folder)
    res = _run_process_env(folder, _env(case, folder), "run", case.arg, "--no-progress")
    _assert_refused(
        case, folder, Outcome(res.returncode, res.stderr, sorted(_listing(folder) - before))
    )


def test_a_fifo_fed_without_end_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A writer that never stops (``dse validate <(yes)``): refused on the file's type, before
    a byte is read, in a real process; nothing waits on the writer."""
    case = spec_path("fifo_fed", "fed.yaml", "is a FIFO (named pipe)", fifos=("fed.yaml",))
    folder = _prepare(case, tmp_path)
    stop = threading.Event()

    def feed() -> None:
        # Read-write: the open never blocks and a reader never sees the end of the file.
        fd = os.open(folder / "fed.yaml", os.O_RDWR | os.O_NONBLOCK)
        try:
            while not stop.is_set():
                try:
                    os.write(fd, b"a: [" * 1024)
                except BlockingIOError:
                    stop.wait(0.01)
        finally:
            os.close(fd)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        res = _run_process_env(folder, _env(case, folder), "validate", "fed.yaml")
    finally:
        stop.set()
    _assert_refused(case, folder, Outcome(res.returncode, res.stderr, []))


def test_the_probe_is_bounded_without_a_trial_time_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``search.trial_timeout_s``: the probe's own limit holds (30 s; 1 s here)."""
    from dse.model import probe

    monkeypatch.setattr(probe, "PROBE_TIMEOUT_S", 1.0)
    case = evaluator(
        "hangs_unbounded", "return {'x': float(sum(range(10**13)))}", "after 1 s (the probe's"
    )
    folder = _prepare(case, tmp_path)
    _assert_refused(case, folder, _in_process(case, folder, "validate", "spec.yaml"))
