"""`sam local invoke` for real, in Docker, against the local stack's stores.

Three parts, each usable alone:

- `engine_problem()`: whether a Docker engine can run the functions' arm64 containers here,
  after trying what a root user with apt can do (install docker.io, qemu-user-static and
  debootstrap; start dockerd; register arm64 emulation). Returns why not, or None.
- `build_image()`: a Lambda-compatible python3.13 image built locally, for machines that cannot
  pull AWS's base image: Debian 13's Python 3.13 (by debootstrap), the runtime interface client
  from PyPI and a bootstrap (devstack/lambda_image/bootstrap). Cached as a Docker image whose
  tag is a digest of what it is built from, and the debootstrap result as a tarball.
- `env_vars()` and `invoke()`: the env-vars file that points each function at the running
  `make run` stack, and the `sam local invoke` command line that uses both.

The functions are arm64 (as deployed); on an x86-64 machine the containers run under qemu user
emulation. docs/deploy.md says why, and what an x86-64 override would cost instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import ipaddress
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devstack.template import ROOT, load

SUITE = "trixie"  # Debian 13: python3 is 3.13, the Lambda runtime's version
RIC = "awslambdaric==4.2.2"
IMAGE_REPOSITORY = "leaderboard-lambda-python3.13"
BOOTSTRAP = Path(__file__).with_name("lambda_image") / "bootstrap"
_RECIPE = 2  # bump when build_image changes what goes into the image
_BINFMT = Path("/proc/sys/fs/binfmt_misc")
_ARCH_NAMES = {"arm64": ("aarch64", "arm64"), "x86_64": ("x86_64", "amd64")}


def say(message: str) -> None:
    print(f"[sam-local] {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base) / "leaderboard-lambda-image"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- the engine -----------------------------------------------------------------------------


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _apt_install(packages: list[str]) -> str | None:
    if not (_is_root() and shutil.which("apt-get")):
        return f"{', '.join(packages)} missing, and this is not root with apt-get to install them"
    say(f"installing {' '.join(packages)} from the OS packages")
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    done = _run(["apt-get", "install", "-y", "-qq", *packages], env=env)
    if done.returncode != 0:
        _run(["apt-get", "update", "-qq"], env=env)
        done = _run(["apt-get", "install", "-y", "-qq", *packages], env=env)
    if done.returncode != 0:
        return f"apt-get install {' '.join(packages)} failed: {done.stderr.strip()[-400:]}"
    return None


def _engine_answers() -> bool:
    return _run(["docker", "info", "--format", "{{.ServerVersion}}"]).returncode == 0


def _start_dockerd() -> str | None:
    if not _is_root():
        return "no Docker engine answers, and only root may start one here"
    if shutil.which("dockerd") is None:
        return "no dockerd on PATH"
    log = cache_dir() / "dockerd.log"
    say(f"starting dockerd (log: {log})")
    # Published ports by iptables rules, not the userland proxy: the proxy accepts on the host
    # port at once, so SAM's readiness probe passes before an emulated runtime emulator listens
    # inside and SAM's request is lost (a 'timed out' invocation). With the rules, the port
    # refuses until the emulator listens, and SAM waits.
    with log.open("ab") as out:
        subprocess.Popen(
            ["dockerd", "--userland-proxy=false"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _engine_answers():
            return None
        time.sleep(0.5)
    return f"dockerd did not answer within 60 s: {log.read_text(errors='replace')[-600:]}"


def _host_runs(arch: str) -> bool:
    return platform.machine().lower() in _ARCH_NAMES[arch]


def _emulation_problem(arch: str) -> str | None:
    """Containers of another architecture need qemu registered with binfmt_misc (flag F, so
    the interpreter works inside containers and chroots)."""
    if _host_runs(arch):
        return None
    name = "qemu-aarch64" if arch == "arm64" else "qemu-x86_64"
    if (_BINFMT / name).exists():
        return None
    if not _is_root():
        return f"{arch} containers need {name} registered in binfmt_misc (qemu-user-static)"
    if not (_BINFMT / "register").exists():
        mounted = _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(_BINFMT)])
        if mounted.returncode != 0:
            return f"binfmt_misc cannot be mounted: {mounted.stderr.strip()}"
    rule = Path(f"/usr/lib/binfmt.d/{name}.conf")
    if not rule.exists() and (problem := _apt_install(["qemu-user-static"])):
        return problem
    try:
        (_BINFMT / "register").write_text(rule.read_text().strip() + "\n")
    except OSError as exc:
        if not (_BINFMT / name).exists():
            return f"registering {name} with binfmt_misc failed: {exc}"
    return None


def engine_problem(arch: str = "arm64") -> str | None:
    """None when Docker can run `arch` Lambda containers here; otherwise the reason."""
    missing = [
        p
        for p, cmd in (("docker.io", "docker"), ("debootstrap", "debootstrap"))
        if shutil.which(cmd) is None
    ]
    if (
        shutil.which("dockerd") is None
        and shutil.which("docker") is not None
        and not _engine_answers()
    ):
        missing.append("docker.io")  # a client alone (no engine)
    if missing and (problem := _apt_install(sorted(set(missing)))):
        return problem
    if not _engine_answers() and (problem := _start_dockerd()):
        return problem
    return _emulation_problem(arch)


# --- the image ------------------------------------------------------------------------------


def image_tag(arch: str = "arm64") -> str:
    """The image's name: a digest of everything it is built from."""
    digest = hashlib.sha256()
    for part in (str(_RECIPE), SUITE, RIC, arch, BOOTSTRAP.read_text()):
        digest.update(part.encode() + b"\0")
    return f"{IMAGE_REPOSITORY}:{arch}-{digest.hexdigest()[:12]}"


def _image_exists(tag: str) -> bool:
    return _run(["docker", "image", "inspect", tag]).returncode == 0


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({done.returncode}):\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        )


def _debootstrap(arch: str, target: Path) -> None:
    """Debian's minimal base with python3 (3.13) for `arch`, without running `arch` code for
    the packages' set-up: debootstrap resolves and downloads (its first stage, native), each
    package is unpacked with the host's dpkg-deb, and only the standard library's bytecode is
    compiled by the image's own python3.13 (under emulation on another architecture). The
    second stage would run every maintainer script under qemu: many minutes, for
    configuration a Lambda runtime does not use."""
    deb_arch = _ARCH_NAMES[arch][1]
    mirror = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
    started = time.monotonic()
    say(f"debootstrap {SUITE} {deb_arch} from {mirror} (resolve and download)")
    _check(
        _run(
            [
                "debootstrap",
                f"--arch={deb_arch}",
                "--foreign",
                "--variant=minbase",
                "--include=python3",
                SUITE,
                str(target),
                mirror,
            ]
        ),
        "debootstrap",
    )
    archives = sorted((target / "var/cache/apt/archives").glob("*.deb"))
    say(f"unpacking {len(archives)} packages")
    for deb in archives:
        _check(_run(["dpkg-deb", "-x", str(deb), str(target)]), f"dpkg-deb -x {deb.name}")
        deb.unlink()
    shutil.rmtree(target / "debootstrap", ignore_errors=True)
    for name in ("passwd", "group"):  # what base-passwd's set-up would have written
        master = target / f"usr/share/base-passwd/{name}.master"
        if master.exists():
            shutil.copy(master, target / "etc" / name)
    say("compiling the standard library's bytecode with the image's python3.13")
    _check(
        _run(
            [
                "chroot",
                str(target),
                "/usr/bin/python3",
                "-m",
                "compileall",
                "-q",
                "-j",
                "0",
                "/usr/lib/python3.13",
            ],
            # beside the sources in the image, not under this machine's bytecode prefix
            env={k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"},
        ),
        "compileall",
    )
    say(f"base system ready in {time.monotonic() - started:.0f} s")


def _base_layer(arch: str) -> Path:
    """The runtime's file tree as one layer tarball, cached under the image's digest."""
    layer = cache_dir() / f"{image_tag(arch).partition(':')[2]}.layer.tar"
    if layer.exists():
        return layer
    base_tar = cache_dir() / f"debian-{SUITE}-{arch}-python3.tar"
    with tempfile.TemporaryDirectory(prefix="lambda-image-") as work:
        rootfs = Path(work) / "rootfs"
        if base_tar.exists():
            say(f"reusing the base system {base_tar}")
            rootfs.mkdir()
            _check(_run(["tar", "-C", str(rootfs), "-xf", str(base_tar)]), "tar -x")
        else:
            _debootstrap(arch, rootfs)
            partial = base_tar.with_suffix(".partial")
            _check(_run(["tar", "-C", str(rootfs), "-cf", str(partial), "."]), "tar")
            partial.rename(base_tar)
        say(f"installing {RIC} (cp313, {arch}) into /var/runtime")
        plat = "manylinux2014_aarch64" if arch == "arm64" else "manylinux2014_x86_64"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target"]
        pip += [str(rootfs / "var/runtime"), "--platform", plat, "--python-version", "3.13"]
        pip += ["--implementation", "cp", "--only-binary=:all:", RIC]
        _check(_run(pip), "pip install awslambdaric")
        shutil.copy(BOOTSTRAP, rootfs / "var/runtime/bootstrap")
        (rootfs / "var/runtime/bootstrap").chmod(0o755)
        for folder in ("var/task", "opt"):
            (rootfs / folder).mkdir(parents=True, exist_ok=True)
        partial = layer.with_suffix(".partial")
        _check(_run(["tar", "-C", str(rootfs), "-cf", str(partial), "."]), "tar")
        partial.rename(layer)
    return layer


def build_image(arch: str = "arm64") -> str:
    """The local image's tag, building it unless an image of the same digest exists."""
    tag = image_tag(arch)
    if _image_exists(tag):
        say(f"using the cached image {tag}")
        return tag
    started = time.monotonic()
    layer = _base_layer(arch)
    say(f"loading the image {tag}")
    _load_image([layer], tag, arch)
    say(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def _built_layers(template: dict[str, Any], function: dict[str, Any]) -> list[str]:
    """The logical ids of a function's layers, in the order Lambda stacks them."""
    names = []
    for ref in [
        *(template.get("Globals", {}).get("Function", {}).get("Layers") or []),
        *(function.get("Properties", {}).get("Layers") or []),
    ]:
        name = ref.get("Ref") if isinstance(ref, dict) else ref
        if isinstance(name, str) and name not in names:
            names.append(name)
    return names


def function_images(built: Path, arch: str = "arm64", only: str | None = None) -> dict[str, str]:
    """One image per set of layers, each the runtime image plus exactly those layers in /opt,
    as Lambda would mount them; function logical id -> image. `only`: that function alone (a
    build of it alone, see build_functions, has only its own layers).

    Why not let SAM add the layers: for layers built from the template, SAM builds its image
    again at every invocation, copying each layer with a RUN step, which under emulation costs
    about a minute per call. Each image here is the cached runtime layer plus one layer of the
    built layers' files, made natively; a function still gets only its own layers."""
    import yaml

    template = yaml.safe_load(built.read_text())
    base = _base_layer(arch)
    base_tag = image_tag(arch)
    if not _image_exists(base_tag):
        _load_image([base], base_tag, arch)
    images: dict[str, str] = {}
    by_set: dict[tuple[str, ...], str] = {}
    for name, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::Function" or (only and name != only):
            continue
        layers = tuple(_built_layers(template, resource))
        if layers not in by_set:
            by_set[layers] = _layered_image(built.parent, layers, base, base_tag, arch)
        images[name] = by_set[layers]
    return images


def _layered_image(
    build_dir: Path, layers: tuple[str, ...], base: Path, base_tag: str, arch: str
) -> str:
    digest = hashlib.sha256(base_tag.encode())
    for layer in layers:
        for path in sorted((build_dir / layer).rglob("*")):
            if path.is_file():
                digest.update(f"{path.relative_to(build_dir)}\0{path.stat().st_size}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    # A repository per layer set: SAM names its derived image after the base's repository.
    tag = f"{IMAGE_REPOSITORY}-{digest.hexdigest()[:12]}:{arch}"
    if _image_exists(tag):
        return tag
    say(f"image {tag}: runtime + {', '.join(layers) or 'no layers'}")
    with tempfile.TemporaryDirectory(prefix="lambda-layers-") as work:
        merged = Path(work) / "tree" / "opt"
        merged.mkdir(parents=True)
        for layer in layers:  # later layers overwrite earlier ones, as in /opt on Lambda
            source = f"{build_dir / layer}/."
            linked = _run(["cp", "-a", "-l", "-f", source, str(merged)])  # no copy if same disk
            if linked.returncode != 0:
                _check(_run(["cp", "-a", "-f", source, str(merged)]), f"copy of {layer}")
        opt = Path(work) / "opt.tar"
        _check(_run(["tar", "-C", str(merged.parent), "-cf", str(opt), "opt"]), "tar of /opt")
        _load_image([base, opt], tag, arch)
    return tag


def _load_image(layers: list[Path], tag: str, arch: str) -> None:
    """`docker load` of an image made by hand: the given layer tarballs and a config that names
    `arch`. No builder is involved, so neither BuildKit nor emulation is needed, and the
    architecture is exactly the one asked for (docker import's --platform is not honoured by
    every engine). A layer the engine already has is not unpacked again."""
    diff_ids = []
    for layer in layers:
        digest = hashlib.sha256()
        with layer.open("rb") as data:
            while chunk := data.read(1 << 20):
                digest.update(chunk)
        diff_ids.append(f"sha256:{digest.hexdigest()}")
    config = {
        "architecture": arch if arch != "x86_64" else "amd64",
        "os": "linux",
        "config": {
            "Env": [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "LANG=C.UTF-8",
            ],
            "WorkingDir": "/var/task",
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }
    raw = json.dumps(config).encode()
    config_name = f"{hashlib.sha256(raw).hexdigest()}.json"
    names = [f"layer{n}.tar" for n in range(len(layers))]
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": names}])
    with tempfile.TemporaryDirectory(prefix="lambda-load-") as work:
        bundle = Path(work) / "image.tar"
        with tarfile.open(bundle, "w") as image:
            for layer, name in zip(layers, names, strict=True):
                image.add(layer, arcname=name)
            for name, content in ((config_name, raw), ("manifest.json", manifest.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(content)
                image.addfile(info, io.BytesIO(content))
        _check(_run(["docker", "load", "--input", str(bundle)]), "docker load")


# --- invoking -------------------------------------------------------------------------------


_LOOPBACK = "127.0.0.1"


def docker_host_address() -> str:
    """How a container reaches this host: the default bridge's gateway on a Linux engine;
    Docker Desktop's name for the host elsewhere (it forwards to the host's loopback itself)."""
    if sys.platform != "linux":
        return "host.docker.internal"
    found = _run(["docker", "network", "inspect", "bridge"])
    if found.returncode == 0:
        for config in json.loads(found.stdout)[0].get("IPAM", {}).get("Config") or []:
            if config.get("Gateway"):
                return str(config["Gateway"])
            if config.get("Subnet"):  # the gateway is the subnet's first address
                return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    return "172.17.0.1"


def store_ports(stack_env: dict[str, str]) -> list[int]:
    """The loopback ports of the local stack's stores and endpoints."""
    ports = set()
    for value in stack_env.values():
        parts = urlsplit(value) if "://" in value else None
        if parts and parts.hostname == _LOOPBACK and parts.port:
            ports.add(parts.port)
    return sorted(ports)


def env_vars(stack_env: dict[str, str], host: str = _LOOPBACK) -> dict[str, dict[str, str]]:
    """`--env-vars` content: every function's template environment pointed at the local stack,
    reached at `host`. SAM applies only variables the template declares, which is why the
    template declares the local overrides (DATABASE_URL, SQS_ENDPOINT_URL) with empty values."""
    seen_from_container = {
        key: re.sub(r"(?<=[/@])127\.0\.0\.1(?=[:/]|$)", host, value) if "://" in value else value
        for key, value in stack_env.items()
    }
    return {
        name: spec.resolved_environment(seen_from_container)
        for name, spec in load().functions.items()
    }


def write_env_vars(stack_env: dict[str, str], path: Path, host: str = _LOOPBACK) -> Path:
    path.write_text(json.dumps(env_vars(stack_env, host), indent=2) + "\n")
    return path


class LoopbackForwarder:
    """The stores listen on the host's loopback only; a container on the bridge network reaches
    the host at the bridge's gateway. While running, this forwards each store port from the
    gateway address (reachable from this host's containers, not from the network) to
    127.0.0.1. Not needed with Docker Desktop, whose host.docker.internal does the same."""

    def __init__(self, address: str, ports: list[int]) -> None:
        self.address, self.ports = address, ports
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _serve(self, port: int) -> asyncio.Server:
        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection(_LOOPBACK, port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

        return await asyncio.start_server(relay, self.address, port)

    def __enter__(self) -> LoopbackForwarder:
        if self.address in (_LOOPBACK, "host.docker.internal"):
            return self
        self._thread.start()
        for port in self.ports:
            future = asyncio.run_coroutine_threadsafe(self._serve(port), self._loop)
            self._servers.append(future.result(timeout=10))
        return self

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        relays = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    def __exit__(self, *exc: object) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


EMULATED_TIMEOUT = 180  # seconds: cold starts under qemu take several times longer


def native_arch() -> str:
    """The functions' architecture that runs here without emulation."""
    return "arm64" if _host_runs("arm64") else "x86_64"


def build_functions(
    arch: str, out: Path, only: str | None = None, *, runtime_python: bool = False
) -> Path:
    """`sam build` of the template for `arch` into `out`; the built template's path. x86_64
    is the local override (LAMBDA_ARCH in layers/layer.mk picks the wheels). `only`: that
    function and its layers alone (SAM builds one resource when named; the built template
    still lists the others, unbuilt). `runtime_python`: as `make build` builds, with the
    layers' bytecode compiled by the runtime's CPython when one is here."""
    started = time.monotonic()
    say(f"sam build ({arch}{', ' + only if only else ''}) into {out}")
    env = sam_environment() | {
        "LAMBDA_ARCH": arch,
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
    }
    if runtime_python:
        env.pop("PYTHON", None)  # the Makefiles' default, python3, then resolves to the venv
        env["RUNTIME_PYTHON"] = _run(
            ["make", "-s", "--no-print-directory", "runtime-python"], cwd=ROOT
        ).stdout.strip()
    done = _run(
        [
            sam_executable(),
            "build",
            *([only] if only else []),
            "--build-dir",
            str(out),
            # a cache of its own: samconfig.toml builds cached, and two builds at once (one
            # per architecture, on two test workers) would prune each other's cache folders
            "--cache-dir",
            str(out.parent / f"{out.name}-cache"),
            "--template",
            "template.yaml",
        ],
        cwd=ROOT,
        env=env,
    )
    _check(done, "sam build")
    say(f"built in {time.monotonic() - started:.0f} s")
    return out / "template.yaml"


def invocation_template(built: Path, arch: str = "arm64") -> Path:
    """The built template for the local images: without its Layers (each function's image
    holds them, see function_images), for `arch`, and with timeouts of at least
    EMULATED_TIMEOUT (a cold start under emulation imports many times slower than on Lambda's
    CPUs)."""
    import yaml  # the built template is plain YAML (sam build writes intrinsics in long form)

    template = yaml.safe_load(built.read_text())
    function = template.setdefault("Globals", {}).setdefault("Function", {})
    function["Architectures"] = [arch]
    function["Timeout"] = max(int(function.get("Timeout", 3)), EMULATED_TIMEOUT)
    function.pop("Layers", None)  # in the function images already (function_images)
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props.pop("Layers", None)
        props.pop("Architectures", None)
        if "Timeout" in props:
            props["Timeout"] = max(int(props["Timeout"]), EMULATED_TIMEOUT)
    emulated = built.with_name(f"template.local-{arch}.yaml")
    emulated.write_text(yaml.safe_dump(template, sort_keys=False))
    return emulated


def sam_executable() -> str:
    local = ROOT / ".venv" / "bin" / "sam"
    found = str(local) if local.exists() else shutil.which("sam")
    if not found:
        raise RuntimeError("aws-sam-cli is not installed (make setup installs it)")
    return found


def invoke_command(
    function: str, event: Path, *, template: Path, env_file: Path, image: str | None
) -> list[str]:
    """`sam local invoke` on the default bridge network (SAM creates its containers there and
    publishes the emulator's port; the env-vars file names the host as the containers see it).
    `image`: the function's local image (function_images), or None for AWS's own image."""
    cmd = [
        sam_executable(),
        "local",
        "invoke",
        function,
        "--event",
        str(event),
        "--template",
        str(template),
        "--env-vars",
        str(env_file),
        "--region",
        os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    ]
    if image:
        cmd += ["--invoke-image", image, "--skip-pull-image"]
    return cmd


def sam_environment(stack_env: dict[str, str] | None = None) -> dict[str, str]:
    """What `sam local invoke` itself needs here: no telemetry calls, a region, and the
    credentials it hands the function: the running stack's (`stack_env`), which its event API
    checks a publish's signature against, or dummy ones (the local SQS accepts any).

    One attempt per AWS call of SAM's own: each invocation asks STS whose account the
    credentials are (for AWS::AccountId), which the local ones cannot answer; where AWS is
    unreachable, botocore's retries made that 5 s of every invocation. SAM does not pass the
    variable on to the function's container."""
    given = stack_env or os.environ
    return os.environ | {
        "SAM_CLI_TELEMETRY": "0",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_ACCESS_KEY_ID": given.get("AWS_ACCESS_KEY_ID", "local"),
        "AWS_SECRET_ACCESS_KEY": given.get("AWS_SECRET_ACCESS_KEY", "local"),
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    }


def parse_output(stdout: str) -> Any:
    """The function's result: the last line of JSON `sam local invoke` prints on stdout."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")) or line in ("null", "true", "false"):
            return json.loads(line)
    raise ValueError(f"no JSON result in the output:\n{stdout[-1000:]}")
