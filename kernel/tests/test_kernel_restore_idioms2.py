"""More idioms of course notebooks (idioms2.py), checkpointed in one real
kernel and restored in the next: a notebook class with a ``__new__`` of its
own, tempfile's objects, ``weakref.finalize``, PIL images opened from files
and dict iterators; and what ``%elastic_restore`` changes in the process
context after the user's restart, named."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms2.ipynb"


def _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request, setup):
    """Runs `setup`, checkpoints, closes the notebook (its kernel exits as
    Jupyter stops it: finalizers run) and starts the next kernel."""
    km, kc = start_in_work(SESSION)
    out = run_cell(kc, setup)
    assert out["error"] is None, out
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"], reply
    stop_elastic_kernel(km, kc)
    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print('first cell')")
    assert first["error"] is None, first
    return kc, reply, first["stderr"]


OWN_NEW = r'''
class Point(tuple):
    def __new__(cls, x, y):
        return super().__new__(cls, (x, y))
    @property
    def x(self):
        return self[0]
class Temp(float):
    def __new__(cls, value, unit):
        obj = super().__new__(cls, value)
        obj.unit = unit
        return obj
p = Point(1, 2)
t = Temp(21.5, "C")
path = [Point(0, 0), Point(3, 4)]
'''
OWN_NEW_PROBE = r'''
import json
print("FACTS" + json.dumps({"p": [repr(p), p.x, type(p).__name__], "t": [t, t.unit], "path": repr(path)}))
'''


def test_objects_of_an_immutable_builtins_subclass_with_its_own_new_load(start_in_work, stop_elastic_kernel,
                                                                         run_cell, control_request):
    """`Point(tuple)` with `__new__(cls, x, y)` was 'migrated', then failed to
    load (missing argument 'y'), and `path` with it."""
    kc, reply, report = _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request, OWN_NEW)
    assert reply["not_restorable"] == [] and {"p", "t", "path"} <= set(reply["migrated"]), reply
    assert "Not restored" not in report, report
    assert run_cell.facts(kc, OWN_NEW_PROBE) == {"p": ["(1, 2)", 1, "Point"], "t": [21.5, "C"],
                                                   "path": "[(0, 0), (3, 4)]"}


COUNTING_NEW = r'''
class Counted:
    created = 0
    def __new__(cls, *args):
        cls.created += 1
        return super().__new__(cls)
    def __init__(self, v):
        self.v = v
items = [Counted(1), Counted(2)]
class Config:
    _instance = None
    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.settings = {}
        return cls._instance
cfg = Config()
cfg.settings["lr"] = 0.1
'''


def test_a_notebook_new_does_not_run_again_for_the_objects_it_made(start_in_work, stop_elastic_kernel, run_cell,
                                                                   control_request):
    """pickle calls `cls.__new__` again: a `__new__` counting its objects
    counted them twice (Counted.created == 4)."""
    kc, _, report = _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request,
                                         COUNTING_NEW)
    assert "Not restored" not in report, report
    out = run_cell(kc, "print(Counted.created, [i.v for i in items], Config() is cfg, cfg.settings)")
    assert out["error"] is None and out["stdout"].strip() == "2 [1, 2] True {'lr': 0.1}", out


TEMPFILES = r'''
import tempfile
scratch = tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=False)
scratch.write("a,b\n1,2\n")
scratch.flush()
doomed = tempfile.NamedTemporaryFile("w+")
'''


def test_a_kept_named_temporary_file_is_opened_again_and_a_deleting_one_is_named(
        start_in_work, stop_elastic_kernel, run_cell, control_request):
    """A NamedTemporaryFile(delete=False) kept open was 'migrated', then
    failed to load (KeyError: 'file') although its file was there."""
    kc, reply, report = _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request,
                                             TEMPFILES)
    [refused] = reply["not_restorable"]
    assert refused["name"] == "doomed" and "NamedTemporaryFile (delete=True)" in refused["reason"], reply
    assert "  - doomed: " in report and "scratch" not in report, report
    out = run_cell(kc, "import os\nprint(scratch.tell(), scratch.delete, os.path.exists(scratch.name))\n"
                       "scratch.write('3,4\\n')\nscratch.seek(0)\nprint(repr(scratch.read()))")
    assert out["error"] is None, out
    assert out["stdout"].splitlines() == ["8 False True", repr("a,b\n1,2\n3,4\n")], out


FINALIZERS = r'''
import tempfile, weakref, os
class Res:
    pass
res = Res()
log = []
fin = weakref.finalize(res, log.append, "cleanup ran")
td = tempfile.TemporaryDirectory()
with open(os.path.join(td.name, "results.csv"), "w") as f:
    f.write("epoch,loss\n")
'''


def test_a_finalizer_is_restored_spent_and_said_and_a_temporary_directory_gone_with_its_kernel_is_named(
        start_in_work, stop_elastic_kernel, run_cell, control_request):
    """A finalizer came back dead without a word; the TemporaryDirectory its
    kernel's exit removed came back 'loaded', silently pointing nowhere."""
    kc, reply, report = _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request,
                                             FINALIZERS)
    assert reply["not_restorable"] == [], reply
    assert "  - td: could not be loaded (ValueError: temporary directory " in report, report
    assert "it is gone, with the files in it" in report
    # the old kernel's exit ran its callback; a finalizer runs once: spent, and said
    assert "a weakref.finalize of list.append() is restored spent" in report, report
    out = run_cell(kc, "print(fin.alive, 'td' in globals())\ndel res\nimport gc\ngc.collect()\n"
                       "print(fin.alive, log)")
    assert out["error"] is None, out
    assert out["stdout"].splitlines() == ["False False", "False []"], out


PIL_SETUP = r'''
from PIL import Image
frames = [Image.new("RGB", (8, 8), (i * 80, 0, 0)) for i in range(3)]
frames[0].save("anim.gif", save_all=True, append_images=frames[1:], duration=100)
frames[0].save("photo.png")
gif = Image.open("anim.gif")
gif.seek(1)
png = Image.open("photo.png")
edited = Image.open("photo.png")
edited.load()
edited.putpixel((0, 0), (1, 2, 3))
'''
PIL_PROBE = r'''
import json
print("FACTS" + json.dumps({"gif": [gif.n_frames, gif.tell(), gif.getpixel((0, 0)), gif.format, gif.filename],
                            "png": [png.text, png.tell(), png.format, png.size],
                            "edited": [edited.getpixel((0, 0)), edited.size]}))
'''


def test_pil_images_opened_from_files_are_opened_again_or_said(start_in_work, stop_elastic_kernel, run_cell,
                                                                control_request):
    """Pillow pickles the pixels only: `gif.n_frames`, `gif.tell()` and
    `png.text` raised AttributeError after the restore, which said nothing."""
    pytest.importorskip("PIL")
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, PIL_SETUP)["error"] is None
    before = run_cell.facts(kc, PIL_PROBE)
    stop_elastic_kernel(km, kc)
    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print('first cell')")
    after = run_cell.facts(kc, PIL_PROBE)
    assert after["gif"] == before["gif"] and after["png"] == before["png"] and after["edited"] == before["edited"]
    assert before["gif"][:2] == [3, 1]
    report = first["stderr"]
    assert "Note: edited: the PngImageFile came back as an Image of its pixels only (its pixels were changed " \
           "since it was opened from " in report, report
    assert "gif:" not in report and "png:" not in report


DICT_ITERATORS = r'''
d = {"a": 1, "b": 2, "c": 3}
keys = iter(d)
next(keys)
items = iter(d.items())
next(items)
'''


def test_dict_iterators_go_on_over_the_restored_dict(start_in_work, stop_elastic_kernel, run_cell,
                                                     control_request):
    """They came back as list iterators over a copy: blind to the dict."""
    kc, _, report = _saved_and_restarted(start_in_work, stop_elastic_kernel, run_cell, control_request,
                                         DICT_ITERATORS)
    assert "Not restored" not in report, report
    out = run_cell(kc, "print(type(keys).__name__, type(items).__name__)\nd['b'] = 20\nprint(next(items))\n"
                       "d['z'] = 26\ntry:\n    next(keys)\nexcept RuntimeError as e:\n    print(e)")
    assert out["error"] is None, out
    assert out["stdout"].splitlines() == ["dict_keyiterator dict_itemiterator", "('b', 20)",
                                          "dictionary changed size during iteration"], out


def test_elastic_restore_names_the_process_context_of_this_session_it_replaced(tmp_path, start_elastic_kernel,
                                                                               run_cell, control_request):
    """After the user's restart, %elastic_restore set the checkpoint's
    environment and random stream over the session's own, silently (only
    variables were named)."""
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "import os, random\nx = 1\nrandom.seed(1)\nos.environ['MODE'] = 'old'")["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"] is True
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    assert run_cell(kc, "import os, random\nos.environ['MODE'] = 'new'\nos.environ['ONLY_NEW'] = '1'\n"
                        "random.seed(42)\nx = 5")["error"] is None
    out = run_cell(kc, "%elastic_restore\nprint(os.environ.get('MODE'), os.environ.get('ONLY_NEW'))")
    assert out["error"] is None, out
    lines = out["stdout"].splitlines()
    assert lines[-1] == "old None"  # what the restore does is unchanged: it is said
    [context] = [line for line in lines if "process context" in line]
    assert context.startswith("This session's own process context was REPLACED by the checkpoint's: "), context
    assert "environment variable MODE" in context and "environment variable ONLY_NEW" in context
    assert "the random module's stream" in context and "'new'" not in context  # values never shown
    assert "working directory" not in context and "sys.path" not in context
