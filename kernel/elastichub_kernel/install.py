"""Install and uninstall the "Elastic Python" kernelspec.

``python -m elastichub_kernel install [--user|--sys-prefix|--prefix P]
[--name N] [--display-name D]`` and ``... uninstall``. The kernelspec runs the
installing interpreter (``sys.executable``), so the kernel always finds the
packages of the environment it was installed from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from typing import Any

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir

KERNEL_NAME = "elastic-python"
DISPLAY_NAME = "Elastic Python"
LAUNCHER_MODULE = "elastichub_kernel.launcher"
SERVER_EXTENSION = "elastichub_kernel.serverext"
# The same file the wheel ships as data_files; written by `install` too
# because editable installs (setuptools' PEP 660 wheels) drop data_files.
SERVER_CONFIG_FILE = Path("jupyter_server_config.d") / "elastichub_kernel.json"
# jupyter_client's own rule for kernelspec names (checked here to give a
# clear message instead of its ValueError).
_VALID_NAME = re.compile(r"^[a-z0-9._\-]+$", re.IGNORECASE)
# Every Elastic kernel hashes strings alike: with Python's per-process hash
# randomization, a restored kernel's hash("apple") differed from the one
# that saved the state, and a notebook's own hash table (hash(k) % n) lost
# its keys. 0 turns randomization off.
KERNEL_ENV = {"PYTHONHASHSEED": "0"}


class InstallError(Exception):
    """A problem the user can fix (bad name, no permission, nothing to remove)."""


def kernel_json(display_name: str = DISPLAY_NAME, executable: str | None = None) -> dict:
    """The kernel.json of the Elastic Python kernelspec."""
    return {
        "argv": [executable or sys.executable, "-m", LAUNCHER_MODULE, "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "env": dict(KERNEL_ENV),
        # `elastichub.checkpoint` marks kernels that answer the checkpoint
        # control request; the server extension relies on it as well as argv.
        "metadata": {"debugger": True, "elastichub": {"checkpoint": True}},
    }


def is_elastic_kernelspec(spec: Any) -> bool:
    """True when a kernelspec launches the Elastic kernel.

    Stock kernels ignore unknown control messages without replying, so asking
    them would only end in a timeout: decide from the spec instead (the mark
    our installer writes, or the launcher module in argv for hand-made specs).
    """
    if spec is None:
        return False
    metadata = getattr(spec, "metadata", None) or {}
    marked = isinstance(metadata.get("elastichub"), dict) and metadata["elastichub"].get("checkpoint")
    return bool(marked) or any("elastichub_kernel" in str(arg) for arg in (getattr(spec, "argv", None) or []))


def _check_name(name: str) -> None:
    if not _VALID_NAME.match(name):
        raise InstallError(
            f"invalid kernel name {name!r}: use only letters, digits, '.', '_' and '-'"
        )


def _copy_logos(dest: Path) -> None:
    # ipykernel's logos, so front ends show a Python icon; optional.
    try:
        from ipykernel.kernelspec import RESOURCES
    except ImportError:
        return
    for logo in Path(RESOURCES).glob("logo-*"):
        shutil.copy(logo, dest / logo.name)


def install(
    name: str = KERNEL_NAME,
    display_name: str = DISPLAY_NAME,
    user: bool = False,
    prefix: str | None = None,
) -> str:
    """Install the kernelspec; returns the directory it was written to.

    ``user`` installs for the current user, ``prefix`` under
    ``PREFIX/share/jupyter/kernels``; neither means system-wide, as
    jupyter_client does (the CLI defaults to ``--sys-prefix`` instead).
    """
    _check_name(name)
    if user and prefix:
        raise InstallError("choose one of --user and --prefix, not both")
    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp)
        (spec_dir / "kernel.json").write_text(json.dumps(kernel_json(display_name), indent=2))
        _copy_logos(spec_dir)
        # TemporaryDirectory is 0700 and the copy keeps modes: other users of
        # a shared prefix must be able to read the spec.
        os.chmod(spec_dir, 0o755)
        try:
            return KernelSpecManager().install_kernel_spec(
                str(spec_dir), kernel_name=name, user=user, prefix=prefix
            )
        except PermissionError as e:
            raise InstallError(
                f"cannot write the kernelspec to {e.filename or 'its directory'}: "
                "permission denied (try --user or --sys-prefix)"
            ) from None
        except OSError as e:
            raise InstallError(f"cannot write the kernelspec to {e.filename}: {e.strerror}") from None


def _server_config_path(user: bool, prefix: str | None) -> Path | None:
    if user:
        return Path(jupyter_config_dir()) / SERVER_CONFIG_FILE
    if prefix:
        return Path(prefix) / "etc" / "jupyter" / SERVER_CONFIG_FILE
    return None  # system-wide: left to the package manager's data_files


def enable_server_extension(user: bool = False, prefix: str | None = None) -> str | None:
    """Enable the checkpoint endpoint for Jupyter Servers reading this location."""
    path = _server_config_path(user, prefix)
    if path is None:
        return None
    config = {"ServerApp": {"jpserver_extensions": {SERVER_EXTENSION: True}}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2) + "\n")
    except PermissionError:
        raise InstallError(f"cannot write {path}: permission denied (try --user)") from None
    except OSError as e:
        raise InstallError(f"cannot write {path}: {e.strerror}") from None
    return str(path)


def _spec_dir(name: str, user: bool, prefix: str | None) -> Path:
    if user:
        return Path(jupyter_data_dir()) / "kernels" / name
    return Path(prefix) / "share" / "jupyter" / "kernels" / name  # type: ignore[arg-type]


def uninstall(name: str = KERNEL_NAME, user: bool = False, prefix: str | None = None) -> str:
    """Remove the kernelspec; returns the directory removed.

    With ``user`` or ``prefix`` only that location is touched; otherwise the
    first one Jupyter would use is removed.
    """
    _check_name(name)
    if user or prefix:
        directory = _spec_dir(name, user, prefix)
        if not (directory / "kernel.json").is_file():
            raise InstallError(f"no kernelspec {name!r} in {directory.parent}")
        try:
            shutil.rmtree(directory)
        except PermissionError:
            raise InstallError(f"cannot remove {directory}: permission denied") from None
        except OSError as e:
            raise InstallError(f"cannot remove {directory}: {e.strerror or e}") from None
        return str(directory)
    ksm = KernelSpecManager()
    if name not in ksm.find_kernel_specs():
        raise InstallError(f"no kernelspec {name!r} is installed (see `jupyter kernelspec list`)")
    try:
        return ksm.remove_kernel_spec(name)
    except PermissionError as e:
        raise InstallError(f"cannot remove {e.filename}: permission denied") from None
    except OSError as e:
        raise InstallError(f"cannot remove kernelspec {name!r}: {e.strerror or e}") from None


def _location_of(spec_dir: Path) -> tuple[bool, str | None] | None:
    """(user, prefix) of the install location a removed kernelspec was in, or None for one
    `install` never writes to (a directory of JUPYTER_PATH's, say)."""
    kernels = spec_dir.parent
    if kernels == Path(jupyter_data_dir()) / "kernels":
        return True, None
    if kernels.parts[-3:] == ("share", "jupyter", "kernels"):
        return False, str(kernels.parents[2])
    return None


def disable_server_extension(spec_dir: str) -> str | None:
    """After an uninstall, remove the server extension's config file that `install` wrote
    next to the kernelspec, once no Elastic kernelspec is left there: `install` enabled it,
    and left behind it outlives `pip uninstall elastichub-kernel`, every Jupyter Server start
    then failing to load the extension. Returns the file removed, if any."""
    location = _location_of(Path(spec_dir))
    path = _server_config_path(*location) if location else None
    if path is None or not path.is_file():
        return None
    for other in Path(spec_dir).parent.glob("*/kernel.json"):
        try:
            if is_elastic_kernelspec(KernelSpec.from_resource_dir(str(other.parent))):
                return None  # that kernel still needs the endpoints
        except (OSError, ValueError):
            continue  # a broken spec of someone else's
    try:
        path.unlink()
    except OSError as e:
        raise InstallError(f"removed the kernelspec, but not {path}: {e.strerror or e}") from None
    return str(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m elastichub_kernel",
        description="Install or uninstall the Elastic Python kernelspec.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command, verb in (("install", "install"), ("uninstall", "remove")):
        sub = commands.add_parser(command, help=f"{verb} the kernelspec")
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help=f"{verb} for the current user")
        where.add_argument(
            "--sys-prefix",
            action="store_true",
            help=f"{verb} in this interpreter's environment ({sys.prefix})"
            + ("; the default" if command == "install" else ""),
        )
        where.add_argument("--prefix", metavar="P", help=f"{verb} under P/share/jupyter/kernels")
        sub.add_argument("--name", default=KERNEL_NAME, help=f"kernelspec name (default {KERNEL_NAME})")
        if command == "install":
            sub.add_argument(
                "--display-name",
                default=DISPLAY_NAME,
                help=f"name shown in the launcher (default {DISPLAY_NAME!r})",
            )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    prefix = args.prefix or (sys.prefix if args.sys_prefix else None)
    try:
        if args.command == "install":
            # The installing environment is the natural default: the spec
            # runs sys.executable, so it belongs next to it.
            if not args.user:
                prefix = prefix or sys.prefix
            where = install(args.name, args.display_name, user=args.user, prefix=prefix)
            print(f"Installed kernelspec {args.name!r} ({args.display_name}) in {where}")
            config = enable_server_extension(user=args.user, prefix=prefix)
            if config:
                print(f"Enabled the Jupyter Server extension {SERVER_EXTENSION} in {config}")
        else:
            where = uninstall(args.name, user=args.user, prefix=prefix)
            print(f"Removed kernelspec {args.name!r} from {where}")
            config = disable_server_extension(where)
            if config:
                print(f"Disabled the Jupyter Server extension {SERVER_EXTENSION}: removed {config} "
                      "(no Elastic kernelspec is left there)")
    except InstallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
