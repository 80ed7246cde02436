"""Progress bars and widgets a notebook leaves (round 14), checkpointed in one real kernel and restored in
the next."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms12.ipynb"

BARS = r'''
from tqdm import tqdm, trange
total = 0
for i in tqdm(range(100)):
    total += i
half = 0
for i in trange(100):
    if i == 40:
        break
    half += i
bar = tqdm(total=50, desc="epochs")
bar.update(20)
'''


def test_a_progress_bar_kept_in_a_variable_comes_back_usable(moved, run_cell):
    """`bar = tqdm(total=50)` saved fine and failed at restore (RecursionError: the stream wrapper every bar
    holds answers any name, and pickle asked it for __setstate__ before it had a stream)."""
    reply, _, kc = moved(SESSION, BARS)
    assert reply["ok"] and "bar" in reply["migrated"], reply
    first = run_cell(kc, "import json\nprint('FACTS' + json.dumps([total, half, bar.n, bar.total, bar.desc]))")
    assert first["error"] is None and "bar" not in first["stderr"].split("Not restored")[-1], first
    line = [ln for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    assert line == 'FACTS[4950, 780, 20, 50, "epochs"]'
    assert run_cell.facts(kc, "bar.update(5)\nbar.close()\nprint('FACTS' + json.dumps([bar.n, bar.disable]))") == [
        25, True]


WIDGETS = r'''
import ipywidgets as widgets
from ipywidgets import IntSlider, Dropdown, Text, Button, Output, interactive, jslink, link
from IPython.display import display
from tqdm.notebook import tqdm as nbtqdm
s = IntSlider(value=7, min=0, max=10)
sid = s.model_id
d = Dropdown(options=["a", "b", "c"], value="b")
clicks = []
def on_click(b):
    clicks.append(b.description)
btn = Button(description="go")
btn.on_click(on_click)
seen = []
s.observe(lambda change: seen.append(change["new"]), names="value")
def f(x=3):
    return x * 2
w = interactive(f, x=(0, 10))
s2 = IntSlider(value=1)
mirror = link((s, "value"), (s2, "value"))
jl = jslink((s, "value"), (s2, "value"))
out = Output()
panel = {"name": Text(value="Ada"), "sliders": [IntSlider(value=i) for i in range(3)]}
display(s)
s.value = 5
later = s.value
closed = IntSlider(value=4)
closed.close()
progress = nbtqdm(total=9, desc="files")
progress.update(3)
'''

WIDGET_FACTS = r'''
import json
s.value = 9
btn.click()
kernel = get_ipython().kernel
print("FACTS" + json.dumps([later, d.value, seen, s2.value, clicks, w.result, panel["name"].value,
                            [x.value for x in panel["sliders"]], s.model_id == sid,
                            sid in kernel.comm_manager.comms, jl.source[0] is s, closed.comm is None,
                            progress.n, progress.container.children[1].max, sid]))
'''


def test_widgets_come_back_with_their_values_callbacks_and_a_comm(moved, run_cell):
    """Every variable holding a widget, and every list or dict of them, was 'not restored' (its comm holds a
    lock): the slider's value, the dropdown's choice and the callbacks the notebook attached were lost."""
    reply, _, kc = moved(SESSION, WIDGETS)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    *facts, sid = run_cell.facts(kc, WIDGET_FACTS)
    assert facts == [5, "b", [5, 9], 9, ["go"], 6, "Ada", [0, 1, 2], True, True, True, True, 3, 9]
    # The page moves the slider: the comm message reaches the restored widget and its callbacks.
    msg = kc.session.msg("comm_msg", {"comm_id": sid,
                                      "data": {"method": "update", "state": {"value": 2}, "buffer_paths": []}})
    kc.shell_channel.send(msg)
    assert run_cell.facts(kc, "print('FACTS' + json.dumps([s.value, seen[-1], s2.value]))") == [2, 2, 2]


def test_an_object_holding_a_comm_is_named_in_plain_words(moved, run_cell):
    """A comm of the notebook's own (not a widget's) was named as 'a ipykernel.comm.comm.BaseComm holding a
    thread lock (a lock of a library's object guards its state ...)'."""
    reply, _, kc = moved(SESSION, "from comm import create_comm\nchannel = {'comm': create_comm(target_name='x')}\n"
                                  "kept = 1")
    assert [r["name"] for r in reply["not_restorable"]] == ["channel"], reply
    assert "a connection to the notebook's page" in reply["not_restorable"][0]["reason"]
    assert "thread lock" not in reply["not_restorable"][0]["reason"]
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps(kept))") == 1


PANDAS_BARS = r'''
import pandas as pd
from tqdm import tqdm
tqdm.pandas(desc="rows")
df = pd.DataFrame({"g": ["a", "b", "a"], "x": [1, 2, 3]})
df["y"] = df["x"].progress_apply(lambda v: v * 10)
'''


def test_tqdm_pandas_registration_survives_the_move(moved, run_cell):
    """`tqdm.pandas()` puts progress_apply on pandas' classes (a call inside tqdm, no cell's code): after a move
    the notebook's next `df["x"].progress_apply(...)` raised AttributeError."""
    reply, _, kc = moved(SESSION, PANDAS_BARS)
    assert reply["ok"], reply
    first = run_cell(kc, "import json\nprint('FACTS' + json.dumps([df['x'].progress_apply(lambda v: v + 1).tolist(),"
                         " df.groupby('g')['x'].progress_apply(sum).tolist(), df['y'].tolist(),"
                         " df.progress_apply(lambda row: row['x'], axis=1).tolist()]))")
    assert first["error"] is None and "tqdm" not in first["stderr"].split("rows")[0], first  # the note names none
    line = [ln for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    assert line == "FACTS[[2, 3, 4], [4, 2], [10, 20, 30], [1, 2, 3]]"
    assert "rows: 100%" in first["stderr"]  # the session's settings, in the bar the method makes


def test_a_bar_over_a_generator_part_way_is_named_plainly(moved, run_cell):
    """A tqdm bar over a generator the loop left part-way was named in pickle's words ("TypeError: cannot pickle
    'generator' object, at pg.iterable"), the generator itself in plain ones."""
    setup = ("from tqdm import tqdm\ndef rows():\n    yield from range(10)\npg = tqdm(rows(), total=10)\n"
             "for n in pg:\n    if n == 3:\n        break\nseen = n")
    reply, _, kc = moved(SESSION, setup)
    reasons = {r["name"]: r["reason"] for r in reply["not_restorable"]}
    assert list(reasons) == ["pg"], reply
    assert "a generator part-way through (its paused execution state cannot be saved)" in reasons["pg"], reasons
    assert "pg.iterable" in reasons["pg"]
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps(seen))") == 3


WIDGET_CLASSES = r'''
import ipywidgets as widgets, traitlets
class Panel(widgets.VBox):
    def __init__(self, **kw):
        self.slider = widgets.IntSlider(value=2)
        self.label = widgets.Label("2")
        super().__init__([self.slider, self.label], **kw)
        self.slider.observe(self.changed, "value")  # the child's callback names its parent
    def changed(self, change):
        self.label.value = str(change["new"])
class Counter(widgets.VBox):
    count = traitlets.Int(0)
    @traitlets.observe("count")
    def _count(self, change):
        self.seen = change["new"]
panel = Panel()
counter = Counter()
counter.count = 4
'''


def test_a_notebooks_own_widget_classes_come_back_with_their_callbacks(moved, run_cell):
    """A panel whose slider's callback is the panel's method failed to load ('NoneType' object has no attribute
    'comm_id': the panel's comm was opened before its slider's), and everything after it with it; a widget
    class with its own trait and @observe came back, but its observer no longer ran (traitlets' lists of the
    class were saved as copies)."""
    reply, _, kc = moved(SESSION, WIDGET_CLASSES)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    first = run_cell(kc, "import json\npanel.slider.value = 5\ncounter.count = 7\nfresh = Counter()\nfresh.count = 1\n"
                         "print('FACTS' + json.dumps([panel.label.value, counter.seen, fresh.seen,"
                         " panel.comm is not None, panel.children[0].comm is not None, Counter.count.name]))")
    assert first["error"] is None and "Not restored" not in first["stderr"], first
    line = [ln for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    assert line == 'FACTS["5", 7, 1, true, true, "count"]'


def test_a_widget_class_with_a_new_of_its_own_is_not_run_again(moved, run_cell):
    """A notebook widget class counting its objects in __new__ counted each restored one again (the restore
    called the class's __new__: the cell's code, run a second time)."""
    setup = ("import ipywidgets as widgets\nmade = []\nclass Tile(widgets.HTML):\n"
             "    def __new__(cls, *args, **kwargs):\n        made.append(cls.__name__)\n"
             "        return super().__new__(cls)\ntiles = [Tile(value=str(n)) for n in range(3)]")
    reply, _, kc = moved(SESSION, setup)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps([made, [t.value for t in tiles]]))") == [
        ["Tile"] * 3, ["0", "1", "2"]]


def test_the_page_finds_the_restored_widgets_under_their_ids(moved, run_cell):
    """What the page's widget manager does when it connects to the new kernel (ipywidgets 8: a
    'jupyter.widget.control' comm, then 'request_states'): the answer holds the restored slider under the id
    the notebook's output shows, at its value. (Drawing it again is the browser's part: not testable here.)"""
    import queue
    import time

    reply, _, kc = moved(SESSION, "import ipywidgets as widgets\ns = widgets.IntSlider(value=6)\nsid = s.model_id")
    sid = run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps(sid))")
    opened = kc.session.msg("comm_open", {"comm_id": "control", "target_name": "jupyter.widget.control", "data": {}})
    opened["metadata"] = {"version": "1.0.0"}
    kc.shell_channel.send(opened)
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "control", "data": {"method": "request_states"}}))
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "no answer to request_states"
        try:
            msg = kc.iopub_channel.get_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == "control":
            break
    states = msg["content"]["data"]["states"]
    assert states[sid]["state"]["value"] == 6 and states[sid]["model_name"] == "IntSliderModel"
