"""%elastic_checkpoint, %elastic_restore, %elastic_status."""

from __future__ import annotations

import json

from IPython.core.magic import Magics, line_magic, magics_class


@magics_class
class ElasticMagics(Magics):
    def __init__(self, shell, kernel):
        super().__init__(shell)
        self.kernel = kernel

    @line_magic
    def elastic_checkpoint(self, line=""):
        """Write a checkpoint of the namespace now."""
        reply = self.kernel.checkpoint_now(force=True)
        if not reply["ok"]:
            print(f"ElasticHub: checkpoint failed: {reply['error']}")
            return
        if reply.get("note"):  # nothing written (after the user's restart, nothing of the user's yet)
            print(f"ElasticHub: no checkpoint written: {reply['note']}.")
            return
        print(f"ElasticHub: checkpoint written to {reply['path']} ({reply['bytes']} bytes, "
              f"{reply['seconds']:.2f} s): {len(reply['migrated'])} saved, {len(reply['recomputed'])} to recompute.")
        for item in reply["not_restorable"]:
            print(f"  not restorable: {item['name']}: {item['reason']}")

    @line_magic
    def elastic_restore(self, line=""):
        """Bring back the last checkpoint of this notebook into the namespace."""
        note = self.kernel.restore_checkpoint()
        print(note or "ElasticHub: no checkpoint to restore for this notebook.")

    @line_magic
    def elastic_status(self, line=""):
        """Show where checkpoints go and what the last one contained."""
        print(json.dumps(self.kernel.status(), indent=1, default=str))
