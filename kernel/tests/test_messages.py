"""What a student reads after a restore (messages.py): short, plain, every loss named."""

from elastichub_kernel.messages import format_live_arrival, format_restore


def _report(**changes):
    report = {"migrated": ["df", "model", "x"], "recomputed": ["squares"], "not_restorable": [], "seconds": 0.42,
              "created": 0, "path": "/ckpt/checkpoint.ehk", "failed_now": [], "differs": [],
              "context": ["working directory /home/jovyan/data", "sys.path entries ../src", "locale de_DE.UTF-8"]}
    return dict(report, **changes)


def test_a_restore_that_lost_nothing_is_two_lines_that_say_where_the_details_are():
    """It was four lines: loaded/recomputed counts, seconds, what came back of the context, and a generic list
    of what restores never carry pointing at "'Not carried' in ElasticHub's docs/kernel.md"."""
    for text in (format_restore(_report()), format_live_arrival(_report())):
        assert len(text.splitlines()) == 2, text
        assert "4 variable(s)" in text and "%elastic_status shows the details" in text, text
        # What cells set up inside libraries cannot be named one by one: said in plain words, never left out.
        assert "inside libraries" in text.splitlines()[1] and "re-run the cell that made it" in text, text
        assert "docs/kernel.md" not in text and "Not carried" not in text and "recomputed" not in text, text


def test_every_loss_of_the_session_is_still_named_with_what_to_do():
    lost = [{"name": "conn", "reason": "cannot pickle 'socket' object"},
            {"name": "gen", "reason": "cannot pickle 'generator' object"}]
    note = "WARNING: the notebook's magic(s) %shout are not carried (no variable holds their function): run it again"
    for text in (format_restore(_report(not_restorable=lost, notes=[note],
                                        differs=[{"name": "cache", "reason": "it was empty"}])),
                 format_live_arrival(_report(not_restorable=lost, notes=[note],
                                             differs=[{"name": "cache", "reason": "it was empty"}]))):
        lines = text.splitlines()
        assert "Not restored (re-run the cells that create them):" in lines, text
        assert "  - conn: cannot pickle 'socket' object" in lines and "  - gen: cannot pickle 'generator' object" \
            in lines, text
        assert note in lines and "Note: cache: it was empty" in lines and len(lines) == 7, text
