"""Shared by `bench/soak` and `bench/fuzz-http`: start the real `wayfinder-router` on a free
loopback port with a configuration derived from the repository's `router.yaml`, speak HTTP to
it over persistent connections, read its resource use from /proc, and stop it.

Standard library only. Not a script of its own; the two tools import it from this folder.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SUPERGRAPH = REPO / "examples" / "bookshop" / "supergraph.graphql"
ROUTER_YAML = REPO / "router.yaml"

# Marker for "the body is not JSON" (None is a valid JSON body: `null`).
NOT_JSON = object()


class SetupError(Exception):
    """The router could not be started or never became ready."""


# ---------------------------------------------------------------------------------------------
# Starting and stopping the router


def router_binary():
    """`$WAYFINDER_ROUTER`, else target/release/wayfinder-router (never built here)."""
    binary = Path(os.environ.get("WAYFINDER_ROUTER") or REPO / "target" / "release" / "wayfinder-router")
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise SetupError(
            f"no router binary at {binary}: build it with `cargo build --release -p "
            "wayfinder-plugin --bin wayfinder-router` or set WAYFINDER_ROUTER"
        )
    return binary


def free_port():
    """A port nobody listens on right now (the kernel picks it for a socket bound to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_workdir(prefix):
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove_workdir(path):
    shutil.rmtree(path, ignore_errors=True)


def write_config(workdir, port):
    """Writes `router.yaml` derived from the repository's: the supergraph listens on
    127.0.0.1:`port`, the health check is off (its fixed port 8088 would clash with another
    router), and the vector cache lives in `workdir` so a run neither reads nor changes the
    repository's `.wayfinder/cache`. Everything else (tenants, limits, mocks) is kept as is.
    YAML is edited as text (the standard library has no YAML); each edit checks that the file
    still has the shape it expects, so a reshaped router.yaml fails loudly here."""
    text = ROUTER_YAML.read_text(encoding="utf-8")

    text, count = re.subn(
        r"^health_check:[ \t]*\n(?:(?:[ \t]+.*)?\n)*",
        "health_check:\n  enabled: false\n",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    if count != 1:
        raise SetupError(f"{ROUTER_YAML}: no top-level `health_check:` block to disable")

    # With the health check's block replaced, the supergraph's is the only `listen:` left.
    listens = re.findall(r"^[ \t]+listen:.*$", text, flags=re.MULTILINE)
    if len(listens) != 1:
        raise SetupError(f"{ROUTER_YAML}: expected one `listen:` under `supergraph:`, found {listens}")
    text = re.sub(
        r"^([ \t]+)listen:.*$",
        lambda m: f"{m.group(1)}listen: 127.0.0.1:{port}",
        text,
        flags=re.MULTILINE,
    )

    if re.search(r"^    index:", text, flags=re.MULTILINE):
        raise SetupError(f"{ROUTER_YAML}: already has `index:`; teach write_config to merge it")
    cache = json.dumps(str(workdir / "cache"))  # a JSON string is a valid YAML scalar
    text, count = re.subn(
        r"^(  wayfinder\.search:[ \t]*\n)",
        lambda m: f"{m.group(1)}    index:\n      cache_dir: {cache}\n",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    if count != 1:
        raise SetupError(f"{ROUTER_YAML}: no `  wayfinder.search:` block under `plugins:`")

    path = workdir / "router.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _die_with_parent():
    """Runs in the child before exec: ask the kernel to SIGTERM the router when the tool that
    started it dies, even by SIGKILL, so no router is left running on a shared machine."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:  # not Linux, or no prctl: the tools' own cleanup still applies
        pass


class RouterProcess:
    """A running `wayfinder-router` logging to a file. Start it from the main thread (the
    parent-death signal follows the thread that forked)."""

    def __init__(self, popen, port, log_path):
        self.popen = popen
        self.pid = popen.pid
        self.host = "127.0.0.1"
        self.port = port
        self.log_path = log_path

    @classmethod
    def start(cls, config, port, supergraph, log_path, extra_args=("--hot-reload",), timeout=120.0):
        """Runs `binary --config CONFIG --supergraph FILE --hot-reload` from the repository
        root (where `index.home`'s default `.wayfinder` is), CONFIG listening on `port`, and
        waits until it answers `{ __typename }` with 200."""
        binary = router_binary()
        env = dict(os.environ)
        # The router's anonymous usage reporting would try to reach the internet.
        env["APOLLO_TELEMETRY_DISABLED"] = "true"
        env.setdefault("APOLLO_ROUTER_LOG", "info")
        env.setdefault("WAYFINDER_HOME", str(REPO / ".wayfinder"))
        log = open(log_path, "wb")
        try:
            popen = subprocess.Popen(
                [str(binary), "--config", str(config), "--supergraph", str(supergraph), *extra_args],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C reaches this tool only, which then stops the
                # router after its clients, instead of racing them.
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        router = cls(popen, port, log_path)
        try:
            router._wait_until_up(timeout)
        except BaseException:
            router.stop()
            raise
        return router

    def _wait_until_up(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise SetupError(f"the router exited with {self.popen.returncode}:\n{self.log_tail()}")
            try:
                response = one_request(self.host, self.port, "POST", "/", graphql_body("{ __typename }"))
                if response.status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise SetupError(f"the router did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.2)

    @property
    def url(self):
        return f"http://{self.host}:{self.port}/"

    def alive(self):
        return self.popen.poll() is None

    def log_text(self):
        try:
            return Path(self.log_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self, grace=10.0):
        """SIGTERM, then SIGKILL after `grace` seconds. Idempotent."""
        if self.popen.poll() is not None:
            return self.popen.returncode
        try:
            self.popen.send_signal(signal.SIGTERM)
            return self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return self.popen.wait()
        except ProcessLookupError:
            return self.popen.poll()


def launch(workdir, supergraph, timeout=120.0):
    """Writes the configuration into `workdir` on a free port and starts the router on
    `supergraph` with hot reload, logging to `workdir/router.log`."""
    port = free_port()
    config = write_config(workdir, port)
    return RouterProcess.start(config, port, supergraph, workdir / "router.log", timeout=timeout)


def wait_search_ready(router, timeout=300.0):
    """Waits until `__search` answers with data and no errors (not SEARCH_NOT_READY), and, when
    the router's log shows the plugin's indexing lines, until the index reports ready, so that
    searches are hybrid rather than lexical-only. Returns the seconds waited."""
    started = time.monotonic()
    deadline = started + timeout
    body = graphql_body('{ __search(query: "book", first: 1) { coordinate } }')
    client = Client(router.host, router.port)
    last = "no answer"
    try:
        while True:
            if not router.alive():
                raise SetupError(f"the router exited with {router.popen.returncode}:\n{router.log_tail()}")
            try:
                response, _ = client.send("POST", "/", body, JSON_HEADERS)
                data = response.json if isinstance(response.json, dict) else {}
                hits = (data.get("data") or {}).get("__search")
                if response.status == 200 and isinstance(hits, list) and not data.get("errors"):
                    text = router.log_text()
                    # The log shows the start of indexing only when its filter lets the engine's
                    # info lines through; then the end shows too.
                    if "indexing the supergraph" not in text or "index ready" in text:
                        return time.monotonic() - started
                    last = "search answers; waiting for `index ready` in the log"
                else:
                    last = f"{response.status} {response.text[:300]}"
            except TransportError as error:
                last = str(error)
            if time.monotonic() > deadline:
                raise SetupError(f"search not ready after {timeout:.0f} s ({last}):\n{router.log_tail()}")
            time.sleep(0.5)
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------
# HTTP


JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}


def graphql_body(query, variables=None, **rest):
    request = {"query": query}
    if variables is not None:
        request["variables"] = variables
    request.update(rest)
    return json.dumps(request).encode("utf-8")


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers  # list of (name, value), as received
        self.raw = raw
        try:
            self.json = json.loads(raw)
        except ValueError:  # includes UnicodeDecodeError
            self.json = NOT_JSON

    @property
    def text(self):
        return self.raw.decode("utf-8", errors="replace")


class TransportError(Exception):
    """No HTTP response at all (after the one resend)."""

    def __init__(self, message, timeout=False, resent=False):
        super().__init__(message)
        self.timeout = timeout
        self.resent = resent  # the request was sent twice


# What a connection the server reset or closed looks like to http.client: no response.
_NO_RESPONSE = (ConnectionError, http.client.HTTPException, OSError)


class Client:
    """One persistent HTTP/1.1 connection (keep-alive), reopened after a failure. Not shared
    between threads."""

    def __init__(self, host, port, timeout=30.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def send(self, method, target, body=None, headers=None, chunked=False):
        """Sends one request (`headers` a dict or a list of (name, value) pairs, values str or
        bytes; `chunked` sends the body with chunked transfer encoding) and returns
        `(response, resent)`. A connection reset or closed with no response is sent once more
        on a new connection (`resent` is True): the router hands its listener to a new server
        on every reload and may drop a connection it had accepted but not read
        (apollographql/router#5185), and an idle keep-alive connection may have been closed
        meanwhile. A second failure, or a timeout, raises TransportError."""
        try:
            return self._once(method, target, body, headers, chunked), False
        except TimeoutError as error:
            self.close()
            raise TransportError(f"timed out after {self.timeout:.0f} s: {error!r}", timeout=True)
        except _NO_RESPONSE as first:
            self.close()
            try:
                return self._once(method, target, body, headers, chunked), True
            except TimeoutError as error:
                self.close()
                raise TransportError(
                    f"timed out after a resend ({first!r}): {error!r}", timeout=True, resent=True
                )
            except _NO_RESPONSE as second:
                self.close()
                raise TransportError(f"no response, twice: {first!r}, then {second!r}", resent=True)
        except BaseException:
            # Anything else (a header or URL http.client refuses to send, an interrupt) leaves
            # the connection in an unknown state.
            self.close()
            raise

    def _once(self, method, target, body, headers, chunked):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        conn = self.conn
        # The low-level calls, so that a header may repeat and nothing is added unasked.
        conn.putrequest(method, target, skip_accept_encoding=True)
        items = headers.items() if isinstance(headers, dict) else (headers or [])
        for name, value in items:
            conn.putheader(name, value)
        if body is not None:
            if chunked:
                conn.putheader("transfer-encoding", "chunked")
            else:
                conn.putheader("content-length", str(len(body)))
        conn.endheaders(_chunks(body) if chunked and body is not None else body, encode_chunked=chunked)
        response = conn.getresponse()
        raw = response.read()
        result = Response(response.status, response.getheaders(), raw)
        if response.will_close:
            self.close()
        return result


def _chunks(body, size=4096):
    for start in range(0, len(body), size):
        yield body[start : start + size]


def one_request(host, port, method, target, body=None, headers=None, timeout=5.0):
    """A request on a connection of its own (for readiness probes)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, target, body=body, headers=headers or JSON_HEADERS)
        response = conn.getresponse()
        return Response(response.status, response.getheaders(), response.read())
    finally:
        conn.close()


def graphql_errors(body):
    """Every entry of `errors` in a response body (a batch answers with an array of them)."""
    entries = body if isinstance(body, list) else [body]
    for entry in entries:
        if isinstance(entry, dict):
            errors = entry.get("errors")
            if isinstance(errors, list):
                yield from errors
            elif errors is not None:
                yield errors  # not a list: reported as an error without a code


def error_code(error):
    """The `extensions.code` of one error, or None."""
    if isinstance(error, dict) and isinstance(error.get("extensions"), dict):
        code = error["extensions"].get("code")
        if isinstance(code, str) and code:
            return code
    return None


def codes(body):
    return [error_code(e) for e in graphql_errors(body)]


# ---------------------------------------------------------------------------------------------
# Resource use


def proc_stats(pid):
    """`{"rss_kb", "threads", "fds"}` of a live process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return {
            "rss_kb": int(fields["VmRSS"].split()[0]),
            "threads": int(fields["Threads"].strip()),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
        }
    except (OSError, KeyError, ValueError):
        return None


def mb(kb):
    return None if kb is None else round(kb / 1024.0, 1)


def growth_pct(before, after):
    if not before or after is None:
        return None
    return round((after - before) * 100.0 / before, 2)
