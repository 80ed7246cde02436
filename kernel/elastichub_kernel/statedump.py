"""What a checkpoint saves of the namespace, and how (engine.py writes it):
each variable classified as migrated, recomputed or not restorable, and
the migrated ones pickled with the notebook's own modules' values and the
library containers' contents (serializer.py). Shared by full checkpoints
and live-migration files (live.py).

- a module (``import numpy as np``) is *recomputed*: re-imported on restore
  and checked against the fingerprint taken now (module file and version);
- a large immutable value produced by a provably pure cell (see recorder)
  is *recomputed* when re-running the cell is cheaper than writing and
  reading the value (measured disk speed); its fingerprint (sha256 of its
  pickle) must match on restore, else the variable is named, never swapped;
- a process-bound object (socket, generator, lock, open file...) or one
  pickle refuses is *not restorable* and named with the reason;
- everything else is *migrated*.
"""

from __future__ import annotations

import hashlib
import pickle
import sys

from . import deepstack, libstate, references, usermodules
from .recorder import HistoryRecorder
from .references import VALUE_PREFIX, library_changes, module_reference
from .typeprobe import is_module, type_name, unrestorable_reason
from .usermodules import MODULE_PREFIX

_PURE_PREFIX = "\x00pure:"
# Values smaller than this are always migrated: recomputing saves nothing.
MIN_RECOMPUTE_BYTES = 1 << 20


def module_fingerprint(module) -> dict:
    version = getattr(module, "__version__", None)
    return {
        "module": module.__name__,
        "file": getattr(module, "__file__", None),
        "version": version if isinstance(version, str) else None,
    }


def value_fingerprint(value) -> str:
    return hashlib.sha256(pickle.dumps(value, protocol=5)).hexdigest()


def _plain_size(value) -> int | None:
    """Size of an immutable builtin value safe to rebuild by a pure cell."""
    kind = type(value)
    if kind in (str, bytes):
        return len(value)
    if kind is tuple and all(type(v) in (int, float, bool, str, bytes, type(None)) for v in value):
        return 16 * len(value)
    return None


def dump_state(ns, names, recorder: HistoryRecorder, speed, context=None):
    """Classify and pickle the variables (shared by full checkpoints and
    live deltas): (dumped, index fields, recomputed, not_restorable).
    ``context``: a SessionContext (context.py) whose changes are saved too,
    with the module-level values of the notebook's own modules."""
    from .serializer import dump_namespace

    migrate, recomputed, not_restorable, imports, pure = [], [], [], [], {}
    refs, contents = {}, {}  # id -> persistent id of each library object referenced; their containers' contents
    write_bps, read_bps = speed.estimate()
    baseline = context.modules if context is not None else frozenset()
    own = (usermodules.user_modules(baseline, usermodules.library_dirs(context.path, context.cwd))
           if context is not None else {})
    for key in [k for k in ns if not isinstance(k, str)]:  # user_variable_names leaves them out: said here
        not_restorable.append({"name": repr(key)[:80], "reason": "a key of globals() that is no name "
                               "(globals()[key] = ...): not saved"})
    for name in names:
        value = ns[name]
        if is_module(value):
            # __main__ only as the notebook's own module (`import __main__`): the next kernel's is that again
            if sys.modules.get(value.__name__) is value and (value.__name__ != "__main__" or vars(value) is ns):
                imports.append({"name": name, **module_fingerprint(value)})
                submodules = loaded_submodules(value, baseline)
                if submodules:
                    imports[-1]["submodules"] = submodules
                recomputed.append(name)
            else:
                not_restorable.append({"name": name, "reason": "a module that cannot be imported by name"})
            continue
        ref = module_reference(name, value, recorder.imported, own)
        if ref is not None:  # `from matplotlib import rcParams`: that object again, not a copy
            imports.append({"name": name, **module_fingerprint(sys.modules[ref[0]]), "attr": ref[1]})
            recomputed.append(name)
            refs[id(value)] = ("ref", *ref)
            copied = references.carried_contents(value)
            if copied is not None:  # changed in place, it keeps the session's contents
                contents[f"{VALUE_PREFIX}{ref[0]}:{ref[1]}"] = copied
            continue
        reason = unrestorable_reason(value, ns)
        if reason:
            not_restorable.append({"name": name, "reason": f"{type_name(value)}: {reason}"})
            continue
        spec = _pure_recompute_spec(name, value, recorder, write_bps, read_bps)
        if spec is not None:
            pure[_PURE_PREFIX + name] = spec
            recomputed.append(name)
            continue
        migrate.append(name)
    module_notes: list = []  # pickled on a C stack that holds the recursion limit the notebook set (deepstack.py)
    carried = deepstack.run(usermodules.carried_values, own, module_notes, recorder.module_attr_stores)
    dumped = deepstack.run(dump_namespace, {**ns, **pure, **carried, **contents},
                           [*carried, *contents, *migrate, *pure], user_ns=ns, watch=frozenset(own), refs=refs)
    for name, why in dumped.failed.items():
        if name.startswith(_PURE_PREFIX):  # plain inputs always pickle; never silent anyway
            recomputed.remove(name[len(_PURE_PREFIX):])
            not_restorable.append({"name": name[len(_PURE_PREFIX):], "reason": f"its recompute recipe {why}"})
            continue
        if name.startswith(MODULE_PREFIX):
            module, attr = name[len(MODULE_PREFIX):].split(":", 1)
            not_restorable.append({"name": f"{module}.{attr}", "reason": f"{type_name(carried[name])} {why}; "
                                   f"importing {module} again makes it anew, as its code does"})
            continue
        if name.startswith(VALUE_PREFIX):
            not_restorable.append({"name": references.shown(name), "reason": f"its contents {why}: it comes back "
                                   "as the library makes it, without the session's changes"})
            continue
        not_restorable.append({"name": name, "reason": f"{type_name(ns[name])} {why}"})
    fields = {
        "records": [vars(r) for r in dumped.records],
        "imports": imports,
        "not_restorable": not_restorable,
        # a read-only source array (np.frombuffer(bytes)) comes back read-only
        "readonly_buffers": [i for i, b in enumerate(dumped.buffers) if b.readonly],
    }
    if own:
        fields["user_modules"] = [{"module": m, "file": f, "stamp": usermodules.loaded_stamp(m, f)}
                                  for m, f in own.items()]
        users: dict = {}
        for name, modules in dumped.uses.items():
            if not name.startswith("\x00"):
                for module in modules:
                    users.setdefault(module, []).append(name)
        fields["module_users"] = users
    if module_notes:
        fields["module_notes"] = module_notes
    changes = library_changes(recorder, own)
    if changes:
        fields["library_changes"] = changes
        fields["library_values"] = references.library_values(changes)
    held = libstate.holding_cells_decimal_context(ns, migrate)
    if held:  # `ctx = decimal.getcontext()`: made the cells' current context again at restore
        fields["decimal_context"] = held
    if context is not None:
        fields["context"] = context.capture()
    return dumped, fields, recomputed, not_restorable


def loaded_submodules(module, baseline: frozenset) -> list:
    """The submodules of a bound package the session loaded, each an
    attribute of its parent: `import urllib.request` binds `urllib` alone,
    and a new kernel that imports `urllib` has no `urllib.request` (its
    urlopen raised AttributeError after a restore). The kernel's own, loaded
    at its start (`baseline`), a new kernel has too."""
    prefix = module.__name__ + "."
    found = []
    for name, sub in list(sys.modules.items()):
        if name.startswith(prefix) and name not in baseline and sub is not None:
            parent, _, attr = name.rpartition(".")
            if getattr(sys.modules.get(parent), attr, None) is sub:
                found.append(name)
    return sorted(found)


def _pure_recompute_spec(name, value, recorder, write_bps, read_bps):
    # Only immutable values qualify, so in-place mutation cannot have
    # happened since; a rebinding would have changed the producer. The cell's
    # own code must bind the name: a value a thread or a widget rebound while
    # the cell ran is in its namespace diff, but re-running it would not
    # bring that value back.
    rec = recorder.producer.get(name)
    if rec is None or not rec.info.pure or not rec.ok or name not in rec.info.binds:
        return None
    size = _plain_size(value)
    if size is None or size < MIN_RECOMPUTE_BYTES:
        return None
    migrate_cost = size / write_bps + size / read_bps
    if rec.duration >= 0.5 * migrate_cost:
        return None
    return {"name": name, "cell": rec.number, "code": rec.code, "inputs": dict(rec.inputs),
            "fingerprint": value_fingerprint(value), "duration": rec.duration}
