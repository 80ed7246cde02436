"""Checkpoints follow their notebook: the server's session says the
notebook now has another path (renamed, or saved under another name), and
the kernel's checkpoint directory, keyed by that path, is moved with it
(``elastichub_session_request``, sent by the server extension). A mixin of
ElasticKernel (kernel.py); imports only the standard library and storage.
"""

from __future__ import annotations

import os

from .storage import move_session_dir, session_key


class SessionFollowMixin:
    """Needs the kernel's checkpoint_root, session_name, session_dir, _state_lock and live state."""

    def _session_dir_for(self, session_name: str) -> str:
        return os.path.join(self.checkpoint_root, session_key(
            session_name or None, server_name=os.environ.get("JUPYTERHUB_SERVER_NAME")))

    async def elastichub_session_request(self, stream, ident, parent):
        name = (parent.get("content") or {}).get("session_name")
        self.session.send(stream, "elastichub_session_reply", self.follow_session(name), parent, ident=ident)

    def follow_session(self, name) -> dict:
        """The notebook now has the path `name` (renamed, or saved under
        another name: the server's session says so). Its checkpoints follow
        it: after a move, the kernel the notebook starts is keyed by the new
        path, and would otherwise find nothing to restore."""
        if not isinstance(name, str) or not name.strip():
            return {"status": "error", "ok": False, "error": "'session_name' must be the notebook's path"}
        new_dir = self._session_dir_for(name)
        if new_dir == self.session_dir:
            return {"status": "ok", "ok": True, "moved": False, "checkpoint_dir": self.session_dir}
        refused = self._live_refuses_checkpoint() or (
            self._live_precopy and "a live migration of this kernel is under way")
        if refused:
            return {"status": "error", "ok": False, "error": f"{refused}: its checkpoints stay under "
                    f"{self.session_name!r} for now"}
        # Not while a cell runs: it may be writing a checkpoint (%elastic_checkpoint).
        if not self._state_lock.acquire(timeout=self.shutdown_busy_timeout):
            return {"status": "error", "ok": False, "error": "a cell is running: its checkpoints stay under "
                    f"{self.session_name!r} for now"}
        try:
            old_dir = self.session_dir
            # Started without a notebook path, it left its folder's checkpoint alone (another notebook's,
            # maybe): that is not this notebook's to take along.
            foreign = not self.session_name and self._skipped_restore
            try:
                replaced = None if foreign else move_session_dir(old_dir, new_dir)
            except OSError as exc:
                return {"status": "error", "ok": False,
                        "error": f"cannot move {old_dir} to {new_dir}: {exc.strerror or exc}"}
            if foreign:
                self._skipped_restore = False
            self.session_name, self.session_dir = name, new_dir
            os.environ["JPY_SESSION_NAME"] = name
            if self.last_checkpoint and self.last_checkpoint.get("path", "").startswith(old_dir + os.sep):
                self.last_checkpoint["path"] = new_dir + self.last_checkpoint["path"][len(old_dir):]
        finally:
            self._state_lock.release()
        self.log.info("ElasticHub: the notebook is now %s: checkpoints in %s", name, new_dir)
        return {"status": "ok", "ok": True, "moved": not foreign, "checkpoint_dir": new_dir, "replaced": replaced}
