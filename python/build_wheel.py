"""Build the nioc wheel: a PEP 517 backend and the script behind `make wheel`.

Standard library only (plus tomli on Python 3.10), so that building needs no download.

    python build_wheel.py --binary ../bin/nioc-gpu --goos linux --goarch amd64 --out dist

writes a platform wheel ``nioc-VERSION-py3-none-PLATFORM.whl`` that carries the binary as
``nioc/bin/nioc-gpu`` (``.exe`` on Windows); the package itself is pure Python, so one wheel
serves every Python 3 of that platform. Without ``--binary`` the wheel is pure
(``py3-none-any``) and the package runs nioc-gpu from ``$NIOC_GPU_BIN`` or the PATH. This is
also what ``pip install ./python`` builds through the PEP 517 hooks below.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same inputs give the same wheel

# Platform tags of Go's GOOS/GOARCH. `static` for a binary without cgo (make dist), which runs
# on any Linux; the binary of `make build` links the C library, so it is tagged as built here.
_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}
_MAC_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
_WIN_ARCH = {"amd64": "amd64", "arm64": "arm64"}


def platform_tag(goos: str, goarch: str, static: bool) -> str:
    """The wheel platform tag for a Go binary of goos/goarch."""
    if goos == "linux" and goarch in _ARCH:
        a = _ARCH[goarch]
        return f"manylinux2014_{a}.musllinux_1_1_{a}" if static else f"linux_{a}"
    if goos == "darwin" and goarch in _MAC_ARCH:
        return f"macosx_12_0_{_MAC_ARCH[goarch]}"  # Go ≥ 1.25 needs macOS 12
    if goos == "windows" and goarch in _WIN_ARCH:
        return f"win_{_WIN_ARCH[goarch]}"
    raise SystemExit(f"build_wheel: no wheel platform tag for {goos}/{goarch}")


def binary_version(path: Path) -> str | None:
    """The version a nioc-gpu binary reports (``nioc-gpu --version``: its commit), None if it
    cannot run here (another platform's)."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    words = (out.stdout or out.stderr).split()
    return words[-1] if out.returncode == 0 and words else None


def _project() -> dict:
    with open(HERE / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _version(local: str | None) -> str:
    version = _project()["version"]
    if local:
        label = re.sub(r"[^A-Za-z0-9]+", ".", local).strip(".")
        if label:
            version += "+" + label
    return version


def _metadata(version: str) -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {version}",
        f"Summary: {p['description']}",
        f"Requires-Python: {p['requires-python']}",
    ]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = HERE / p["readme"]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")


def _package_files() -> list[tuple[str, Path]]:
    src = HERE / "src"
    files = []
    for path in sorted((src / "nioc").rglob("*")):
        rel = path.relative_to(src).as_posix()
        if path.is_file() and "__pycache__" not in rel and not rel.startswith("nioc/bin/"):
            files.append((rel, path))
    return files


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(
    out_dir: Path,
    binary: Path | None = None,
    tag: str = "any",
    local: str | None = None,
    exe: bool = False,
    editable_path: Path | None = None,
) -> Path:
    """Write the wheel into out_dir and return its path."""
    name = _project()["name"]
    version = _version(local)
    dist_info = f"{name}-{version}.dist-info"
    entries: list[tuple[str, bytes, int]] = []  # (name in the wheel, content, mode)
    if editable_path is not None:
        entries.append((f"__editable__.{name}.pth", (str(editable_path) + "\n").encode(), 0o644))
    else:
        entries += [(rel, path.read_bytes(), 0o644) for rel, path in _package_files()]
    if binary is not None:
        entries.append(("nioc/bin/nioc-gpu" + (".exe" if exe else ""), binary.read_bytes(), 0o755))
    pure = binary is None
    wheel_meta = (
        "Wheel-Version: 1.0\nGenerator: nioc build_wheel.py\n"
        f"Root-Is-Purelib: {'true' if pure else 'false'}\n"
        + "".join(f"Tag: py3-none-{t}\n" for t in tag.split("."))
    )
    entries.append((f"{dist_info}/METADATA", _metadata(version).encode(), 0o644))
    entries.append((f"{dist_info}/WHEEL", wheel_meta.encode(), 0o644))
    record = "".join(f"{n},{_hash(d)},{len(d)}\n" for n, d, _ in entries) + f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{version}-py3-none-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data, mode in entries:
            info = zipfile.ZipInfo(n, date_time=EPOCH)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return path


# PEP 517 / PEP 660 hooks: `pip install ./python` and `pip install -e ./python`.


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return write_wheel(Path(wheel_directory)).name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return write_wheel(Path(wheel_directory), editable_path=HERE / "src").name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{p['name']}-{p['version']}"
    path = Path(sdist_directory) / f"{base}.tar.gz"
    members = [("pyproject.toml", HERE / "pyproject.toml"), ("build_wheel.py", HERE / "build_wheel.py"),
               (p["readme"], HERE / p["readme"])]
    members += [("src/" + rel, f) for rel, f in _package_files()]
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel, f in members:
            data = f.read_bytes()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, 315532800
            tar.addfile(info, io.BytesIO(data))
        pkg_info = _metadata(p["version"]).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mode, info.mtime = len(pkg_info), 0o644, 315532800
        tar.addfile(info, io.BytesIO(pkg_info))
    return path.name


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Build nioc wheels that carry the nioc-gpu binary.")
    ap.add_argument("--binary", type=Path, help="the nioc-gpu binary of the current platform (make build)")
    ap.add_argument("--goos", help="its GOOS (go env GOOS)")
    ap.add_argument("--goarch", help="its GOARCH (go env GOARCH)")
    ap.add_argument("--dist", type=Path, help="a directory of make dist's binaries nioc-gpu-OS-ARCH[.exe]: "
                    "a wheel for each, into OUT/portable")
    ap.add_argument("--local", help="local version label (0.1.0+LABEL); default: what the binary's --version "
                    "says (its commit), for make dist's binaries what the one that runs here says")
    ap.add_argument("--out", type=Path, default=HERE / "dist")
    a = ap.parse_args(argv)
    if a.binary:
        if not (a.goos and a.goarch):
            ap.error("--binary needs --goos and --goarch")
        tag = platform_tag(a.goos, a.goarch, static=False)
        local = a.local or binary_version(a.binary)
        print(write_wheel(a.out, a.binary, tag, local, exe=a.goos == "windows"))
    if a.dist and a.dist.is_dir():
        found = []
        for f in sorted(a.dist.glob("nioc-gpu-*-*")):
            m = re.fullmatch(r"nioc-gpu-([a-z0-9]+)-([a-z0-9]+)(\.exe)?", f.name)
            if m:
                found.append((f, m))
        # make dist builds them all from one checkout: the one that runs here says which.
        local = a.local or next((v for v in map(binary_version, (f for f, _ in found)) if v), None)
        for f, m in found:
            tag = platform_tag(m[1], m[2], static=True)
            print(write_wheel(a.out / "portable", f, tag, local, exe=bool(m[3])))
    if not a.binary and not a.dist:
        print(write_wheel(a.out, local=a.local))


if __name__ == "__main__":
    sys.exit(main())
