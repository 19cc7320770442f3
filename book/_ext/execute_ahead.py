"""Execute the book's notebooks side by side before Sphinx reads them.

myst-nb, in execution mode "cache", runs each notebook that is not in the
jupyter-cache when Sphinx reads it: one after the other. This hook runs
them first, as many at a time as the machine has cores (at most one per
notebook), and puts each executed notebook in the cache as myst-nb does;
myst-nb then reads them from there. A notebook that fails here is not
cached: myst-nb runs it again and reports its error as it always has.

Each kernel gets an equal share of the cores (OMP_NUM_THREADS), so that
PyTorch's thread pools do not outnumber them. The notebooks named in the
setting `execute_ahead_first` start first, in its order (the slowest
first, so that the last few finish together); the rest follow. A name in
$MHA_EXECUTE_FIRST (comma-separated docnames) goes before them all: the
tests put there the notebooks a selection such as `pytest -k one_head`
waits for.

jupyter-cache keys an executed notebook on the notebook's own cells, so
a change to the code it imports (the setting `execute_ahead_inputs`:
book/mhabook) would leave every figure and number as the old code drew
them. When the files there change, this hook empties the cache and has
Sphinx read every notebook again.

Why not jupyter-cache's own parallel executor (`JupyterExecutorLocalMproc`,
`jcache project execute --executor local-parallel`)? It runs the records
of a cache project over a plain `multiprocessing.Pool()`, in no order we
choose, each kernel with as many threads as the machine has cores, and
myst-nb's "cache" mode never calls it. This hook adds what it lacks: the
order (slowest first), one share of the cores per kernel, and the myst-nb
cache records myst-nb then reads.
"""

import hashlib
import os
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from fnmatch import fnmatch
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def socket_kernels(manager=None):
    """A subclass of jupyter_client's kernel manager class `manager`
    (AsyncKernelManager if None, as nbclient's) whose kernels listen on
    Unix sockets of their own, not on TCP ports.

    A TCP kernel listens on five ports that jupyter_client picks free and
    releases before the kernel binds them. With several kernels starting
    at once (the build's and the tests'), two can pick the same port, and
    a client can reach a kernel not its own: its heartbeat "ping" then
    arrives on that kernel's control channel, and the kernel prints
    "Uncaught exception in ZMQStream callback" into the cell it is
    running. A socket file named after the kernel's own connection file
    belongs to that kernel alone. Where sockets are not available (not
    POSIX) or their path would be over Linux's 107 bytes, TCP it is.
    """
    from jupyter_client import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_core.utils import ensure_dir_exists
    from traitlets import default

    folder = jupyter_runtime_dir()
    ensure_dir_exists(folder, 0o700)
    # a socket's path: folder + "/kernel-" + 36-character uuid + "-ipc-5"
    sockets = os.name == "posix" and len(folder) + 50 <= 107

    class SocketKernelManager(manager or AsyncKernelManager):
        @default("transport")
        def _transport(self):
            return "ipc" if sockets else "tcp"

        @default("connection_file")
        def _connection_file(self):  # the sockets' names start with it
            return os.path.join(folder, f"kernel-{uuid.uuid4()}.json")

    return SocketKernelManager


def execute(path, timeout, threads):
    """Run one notebook in its folder; return (notebook, seconds, error)."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ["OMP_NUM_THREADS"] = str(threads)  # the kernel inherits it
    for attempt in (1, 2):
        notebook = nbformat.read(path, as_version=4)
        try:
            result = single_nb_execution(
                notebook,
                cwd=str(Path(path).parent),
                timeout=timeout,
                allow_errors=False,
                meta_override=True,
                # a kernel can take over nbclient's 60 s to start while the
                # tests and other kernels hold every core
                startup_timeout=max(timeout or 0, 300),
                kernel_manager_class=socket_kernels(),
            )
            break
        except RuntimeError as error:
            # A TCP kernel (see socket_kernels) can lose a port to another
            # process starting at the same moment ("Address already in
            # use"); it dies before it replies. Start it again.
            if attempt == 2 or "Kernel died before replying" not in str(error):
                raise
            logger.info("%s: its kernel died at start; starting again", path)
    error = None if result.err is None else repr(result.err)
    return notebook, result.time, error


def uncached(cache, paths):
    import nbformat

    missing = []
    for path in paths:
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            missing.append(path)
    return missing


def inputs_digest(folders):
    """A hash of the code and data the notebooks read: each file's path and
    bytes."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.suffix in {".py", ".js", ".css", ".tsv", ".txt"}:
                name = path.relative_to(folder).as_posix().encode()
                digest.update(name + path.read_bytes())
    return digest.hexdigest()


def forget_if_inputs_changed(app, env, docnames, cache_path):
    """Empty the cache and read every notebook again if the code they
    import is not what the cached notebooks ran with."""
    from jupyter_cache import get_cache

    stamp = Path(cache_path, "inputs.sha256")
    digest = inputs_digest(
        Path(app.srcdir, folder) for folder in app.config.execute_ahead_inputs
    )
    if stamp.exists() and stamp.read_text() == digest:
        return
    if Path(cache_path).exists():
        get_cache(cache_path).clear_cache()
    notebooks = {
        name
        for name in env.found_docs
        if str(env.doc2path(name)).endswith(".ipynb")
    }
    docnames[:] = sorted(set(docnames) | notebooks)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)


def in_order(docnames, first):
    """`docnames` with those in `first` at the front, in its order."""
    rank = {name: i for i, name in enumerate(first)}
    return sorted(docnames, key=lambda name: rank.get(name, len(rank)))


def execute_ahead(app, env, docnames):
    config = env.mystnb_config  # myst-nb's settings, its cache path set
    if config.execution_mode != "cache" or config.execution_in_temp:
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    forget_if_inputs_changed(app, env, docnames, config.execution_cache_path)
    cache = get_cache(config.execution_cache_path)
    first = [n for n in os.environ.get("MHA_EXECUTE_FIRST", "").split(",")]
    docnames = in_order(
        sorted(docnames),
        [n for n in first if n] + app.config.execute_ahead_first,
    )
    paths = [str(env.doc2path(name)) for name in docnames]
    paths = uncached(
        cache,
        [
            path
            for path in paths
            if path.endswith(".ipynb")
            and not any(
                fnmatch(path, pattern)
                for pattern in config.execution_excludepatterns
            )
        ],
    )
    workers = min(os.cpu_count() or 1, len(paths))
    if workers < 2:
        return  # nothing to gain: myst-nb runs it as usual
    threads = max(1, (os.cpu_count() or 1) // workers)
    timeout = config.execution_timeout
    logger.info(f"executing {len(paths)} notebooks, {workers} at a time")
    with ProcessPoolExecutor(workers) as pool:
        futures = {
            pool.submit(execute, path, timeout, threads): path
            for path in paths
        }
        for future in as_completed(futures):
            path = futures[future]
            notebook, seconds, error = future.result()
            if error:
                logger.info(f"{path} failed ({error}): myst-nb will rerun it")
                continue
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(
                CacheBundleIn(
                    notebook, record.uri, data={"execution_seconds": seconds}
                ),
                check_validity=False,
                overwrite=True,
            )
            logger.info(f"executed {Path(path).name} in {seconds:.1f} s")


def setup(app):
    app.add_config_value("execute_ahead_first", [], "")
    app.add_config_value("execute_ahead_inputs", [], "")
    app.connect("env-before-read-docs", execute_ahead)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
