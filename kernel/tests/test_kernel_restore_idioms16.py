"""A data-science course's notebook (polars), round 16: checkpointed in one real kernel and restored in the next."""

import json

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms16.ipynb"

SQL_CONTEXT = r'''
import polars as pl
sales = pl.DataFrame({"region": ["north", "south", "north"], "amount": [10, 20, 5]})
ctx = pl.SQLContext({"sales": sales, "my table": sales.lazy().filter(pl.col("amount") > 6)}, eager=True)
ctx.execute("CREATE TABLE big AS SELECT * FROM sales WHERE amount >= 10")
'''

QUERY = r'''
import json
out = ctx.execute('SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region')
print(json.dumps([sorted(ctx.tables()), type(out).__name__, out.to_dicts(),
                  ctx.execute('SELECT COUNT(*) AS n FROM "my table"').item(), ctx.execute("SELECT * FROM big").height]))
'''


def test_a_polars_sql_context_comes_back_with_the_frames_it_registered(moved, run_cell):
    """`ctx = pl.SQLContext(sales=df, eager=True)`: polars cannot pickle it, so it was named as not restored and the
    moved notebook's next query failed with a NameError. It comes back with the same tables under the same names,
    eager still."""
    reply, before, kc = moved(SESSION, SQL_CONTEXT, after=lambda kc: run_cell(kc, QUERY))
    assert reply["ok"] and not reply["not_restorable"] and before["error"] is None, (reply, before)
    expected = json.loads(before["stdout"])
    assert expected[0] == ["big", "my table", "sales"] and expected[1] == "DataFrame", expected
    out = run_cell(kc, QUERY)
    assert out["error"] is None and json.loads(out["stdout"]) == expected, out


SEEDED = r'''
import polars as pl
pl.set_random_seed(7)
drawn = pl.Series(range(100)).shuffle().to_list()
'''

UNSEEDED = r'''
import polars as pl
# pl.set_random_seed(7) would make the shuffle reproducible
note = "set_random_seed"
drawn = pl.Series(range(100)).shuffle(seed=3).to_list()
'''


def test_a_polars_random_seed_the_notebook_set_is_named_after_a_move(moved, run_cell):
    """`pl.set_random_seed(7)`: polars has no getter for its random stream, so the moved notebook's next
    `shuffle()` drew other values than it would have, without a word. The restore now says so, and only for a
    notebook that called it (a comment or a string naming it is no call)."""
    reply, _, kc = moved(SESSION, SEEDED)
    assert reply["ok"], reply
    out = run_cell(kc, "len(drawn)")
    assert out["error"] is None and "pl.set_random_seed" in out["stderr"], out

    reply, _, kc = moved("work/unseeded.ipynb", UNSEEDED)
    assert reply["ok"], reply
    out = run_cell(kc, "len(drawn)")
    assert out["error"] is None and "restored" in out["stderr"] and "set_random_seed" not in out["stderr"], out
