#!/usr/bin/env python3
"""bench/faults.py -- the fault campaign's runs that fit on one machine in bounded time.

Each case starts a fresh `dynrelay serve` on loopback with its own state directory, does
something hostile or unlucky to it, and prints what the clients saw and what the audit trail
holds. Run through bench/faults, which builds the binary; stdlib Python only.
"""
import errno
import os
import re
import selectors
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time

BINARY = os.environ["DYNRELAY_BIN"]
OUT = []
RELAYS = []  # every relay a case started, stopped after the case whatever happened


def say(line=""):
    print(line, flush=True)
    OUT.append(line)


# --- peers --------------------------------------------------------------------------------

class Server:
    """A loopback listener; `handle(conn)` runs on its own thread per connection."""

    def __init__(self, handle, host="127.0.0.1"):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(4096)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.handle = handle
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()


def echo(conn):
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def never_read(conn):
    pass  # held open by Server.held, never read


def reset(conn):
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def cutting_origin(reply, ending):
    def handle(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        conn.sendall(reply)
        if ending == "reset":
            reset(conn)
        else:
            conn.shutdown(socket.SHUT_WR)
            try:
                conn.recv(1)
            except OSError:
                pass
    return handle


# --- the relay ----------------------------------------------------------------------------

class Relay:
    def __init__(self, lines, state=None):
        self.dir = tempfile.mkdtemp(prefix="dynrelay-faults-")
        self.state = state or os.path.join(self.dir, "state")
        self.config = os.path.join(self.dir, "dynrelay.conf")
        RELAYS.append(self)
        with open(self.config, "w") as f:
            f.write("\n".join([f"state-dir {self.state}"] + lines) + "\n")
        self.start()

    def start(self):
        self.log = open(os.path.join(self.dir, "stderr.log"), "a+")
        env = dict(os.environ, DYNRELAY_LOG="notice")
        self.proc = subprocess.Popen([BINARY, "serve", "--config", self.config], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 20
        while time.time() < deadline:
            text = self.stderr()
            found = re.findall(r"ready listeners=(\S+)", text)
            if len(found) > getattr(self, "starts", 0):
                self.starts = len(found)
                entries = found[-1].split(",")
                self.proxy = [int(e.rsplit(":", 1)[1]) for e in entries if not e.startswith("forward:")]
                self.forward = [int(e.rsplit(":", 1)[1]) for e in entries if e.startswith("forward:")]
                return
            if self.proc.poll() is not None:
                raise RuntimeError("dynrelay exited: " + text[-2000:])
            time.sleep(0.02)
        raise RuntimeError("dynrelay not ready: " + self.stderr()[-2000:])

    def stderr(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def rows(self, sql, args=()):
        db = sqlite3.connect(f"file:{self.state}/audit.db?mode=ro", uri=True, timeout=10)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def verify(self):
        result = subprocess.run([BINARY, "audit", "verify", "--db", f"{self.state}/audit.db"],
                                capture_output=True, text=True)
        return (result.stdout + result.stderr).strip().split(": ", 1)[-1]

    def stop(self, sig=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def connect_tunnel(port, target, source="127.0.0.1"):
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return s, status


def how_it_ended(s, timeout=10.0):
    """'reset', 'fin' or 'open' once the bytes stop (bounded)."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return "fin"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "open"
    except OSError as e:
        return "reset" if e.errno in (errno.ECONNRESET, errno.EPIPE) else f"errno {e.errno}"


def tcp_mem_pages():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                return int(line.split("mem")[1].split()[0])
    return 0


def relay_socket_bytes(pid):
    """Bytes queued in the relay's own sockets (receive queues + send queues), from ss."""
    out = subprocess.run(["ss", "-tnmpH"], capture_output=True, text=True).stdout.splitlines()
    total = 0
    for i, line in enumerate(out):
        if f"pid={pid}," not in line:
            continue
        joined = line + (out[i + 1] if i + 1 < len(out) else "")
        m = re.search(r"skmem:\(r(\d+),rb\d+,t\d+,tb\d+,f\d+,w(\d+)", joined)
        if m:
            total += int(m.group(1)) + int(m.group(2))
    return total


def curl(args):
    return subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "20"] + args, env=dict(
        os.environ, http_proxy="", https_proxy="", all_proxy="", no_proxy="")).returncode


# --- the cases ----------------------------------------------------------------------------

def silent_truncation():
    say("## 1. An origin cuts its response body")
    say()
    say("curl's exit status fetching from an origin that sends part of a body and then ends the")
    say("connection: directly, through the relay (absolute-form), and through a CONNECT tunnel.")
    say("0 means curl took the part for the whole.")
    say()
    say("| body | origin ends with | direct | absolute-form | CONNECT | close row |")
    say("|---|---|---:|---:|---:|---|")
    cases = [
        ("close-delimited", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"x" * 65536, "reset"),
        ("Content-Length 1 MiB", b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + b"x" * 65536, "fin"),
        ("Content-Length 1 MiB", b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + b"x" * 65536, "reset"),
        ("chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n" + b"x" * 65536 + b"\r\n", "fin"),
    ]
    for body, reply, ending in cases:
        origin = Server(cutting_origin(reply, ending))
        relay = Relay(["listen 127.0.0.1:0", f"server 127.0.0.1:{origin.port}"])
        url = f"http://127.0.0.1:{origin.port}/"
        proxy = f"http://127.0.0.1:{relay.proxy[0]}"
        direct, forwarded, tunnelled = curl([url]), curl(["-x", proxy, url]), curl(["-p", "-x", proxy, url])
        time.sleep(0.3)
        close = relay.rows("SELECT reason, status FROM audit_events WHERE event = 'request-close'")
        say(f"| {body} | {ending} | {direct} | {forwarded} | {tunnelled} | {close[0][0] if close else '-'}, status {close[0][1] if close else '-'} |")
        relay.cleanup()
    say()


def sigkill_and_restart():
    say("## 2. SIGKILL with streams open, then a restart")
    say()
    upstream = Server(echo)
    state = tempfile.mkdtemp(prefix="dynrelay-faults-state-")
    lines = ["listen 127.0.0.1:0", f"forward 127.0.0.1:0 to 127.0.0.1:{upstream.port}",
             f"server 127.0.0.1:{upstream.port}", "max-connections-per-source 10000"]
    relay = Relay(lines, state=state)
    clients = []
    for _ in range(50):
        s, status = connect_tunnel(relay.proxy[0], f"127.0.0.1:{upstream.port}")
        clients.append(s)
        f = socket.create_connection(("127.0.0.1", relay.forward[0]))
        clients.append(f)
    for s in clients:
        s.sendall(b"ping")
        s.recv(4)
    relay.stop(9)
    open_rows = relay.rows("SELECT count(*) FROM audit_events WHERE event IN ('tunnel-open', 'forward-open')")[0][0]
    closes = relay.rows("SELECT count(*) FROM audit_events WHERE event IN ('tunnel-close', 'forward-close')")[0][0]
    say(f"- before the kill: 50 CONNECT tunnels and 50 forwards relaying; after SIGKILL the trail holds "
        f"{open_rows} open rows and {closes} close rows.")
    for s in clients:
        s.close()
    relay.start()
    line = [l for l in relay.stderr().splitlines() if "left open" in l]
    say(f"- the restart logs: `{line[0] if line else '(nothing)'}`")
    crashed = relay.rows("SELECT event, count(*), sum(bytes_up IS NULL) FROM audit_events "
                         "WHERE reason = 'relay-crashed' GROUP BY event ORDER BY event")
    for event, count, null_bytes in crashed:
        say(f"- `{event}` rows with reason `relay-crashed`: {count} ({null_bytes} with byte counts NULL)")
    relay.stop()
    say(f"- `audit verify`: {relay.verify()}")
    relay.start()
    again = len([l for l in relay.stderr().splitlines() if "left open" in l])
    say(f"- a clean stop and a second start: {'nothing more to close' if again == 1 else 'closed again!'}")
    relay.cleanup()
    shutil.rmtree(state, ignore_errors=True)
    say()


def sigterm_under_load(clients=500):
    say("## 3. SIGTERM under load")
    say()
    upstream = Server(echo)
    relay = Relay(["listen 127.0.0.1:0", f"forward 127.0.0.1:0 to 127.0.0.1:{upstream.port}",
                   f"server 127.0.0.1:{upstream.port}", "drain-timeout 2s", "max-connections-per-source 10000"])
    socks = []
    for _ in range(clients):
        s = socket.create_connection(("127.0.0.1", relay.forward[0]))
        s.sendall(b"x" * 100)
        socks.append(s)
    for s in socks:
        s.recv(100)
        s.setblocking(False)
    started = time.time()
    relay.proc.send_signal(15)
    ended = {}
    live = set(range(clients))
    while live and time.time() - started < 15:
        for i in list(live):
            s = socks[i]
            try:
                s.send(b"y" * 100)
                while s.recv(65536):
                    pass
                ended[i] = "fin"
                live.discard(i)
            except BlockingIOError:
                pass
            except (ConnectionResetError, BrokenPipeError):
                ended[i] = "reset"
                live.discard(i)
        time.sleep(0.05)
    code = relay.proc.wait(timeout=20)
    counts = {k: list(ended.values()).count(k) for k in ("reset", "fin")}
    say(f"- {clients} raw-TCP clients streaming through a static forward, `drain-timeout 2s`, SIGTERM: "
        f"{counts['reset']} saw a reset, {counts['fin']} a FIN, {len(live)} still open after 15 s; "
        f"dynrelay exited {code} after {time.time() - started:.1f} s.")
    reasons = relay.rows("SELECT reason, count(*) FROM audit_events WHERE event = 'forward-close' GROUP BY reason")
    opens = relay.rows("SELECT count(*) FROM audit_events WHERE event = 'forward-open'")[0][0]
    say(f"- the trail: {opens} `forward-open` rows; close rows by reason: "
        + ", ".join(f"`{r}` {n}" for r, n in reasons) + f"; `audit verify`: {relay.verify()}")
    for s in socks:
        s.close()
    relay.cleanup()
    say()


def full_disk():
    say("## 4. The trail's file system fills up")
    say()
    if os.geteuid() != 0:
        say("- not run: mounting a small tmpfs needs root.")
        say()
        return
    mount = tempfile.mkdtemp(prefix="dynrelay-faults-tmpfs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mount], check=True)
    try:
        upstream = Server(echo)
        relay = Relay(["listen 127.0.0.1:0", f"server 127.0.0.1:{upstream.port}", "max-connections-per-source 10000"],
                      state=os.path.join(mount, "state"))
        target = f"127.0.0.1:{upstream.port}"
        tunnel, status = connect_tunnel(relay.proxy[0], target)
        tunnel.sendall(b"ping")
        tunnel.recv(4)
        filler = os.path.join(mount, "filler")
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        statuses = {}
        for i in range(220):
            s, st = connect_tunnel(relay.proxy[0], "127.0.0.2:1" if i % 2 else target)
            statuses[st] = statuses.get(st, 0) + 1
            s.close()
        tunnel.shutdown(socket.SHUT_WR)
        how_it_ended(tunnel, 5)
        time.sleep(1.5)
        say(f"- one tunnel open, then the 8 MiB tmpfs holding the state directory is filled. 220 more CONNECTs "
            f"(half to a registered server, half not) get: "
            + ", ".join(f"{n} × {st}" for st, n in sorted(statuses.items())) + ".")
        dropped = [l for l in relay.stderr().splitlines() if "could not be stored" in l]
        say(f"- the log: `{dropped[0] if dropped else '(nothing)'}`")
        os.unlink(filler)
        deadline = time.time() + 10
        lost = []
        while time.time() < deadline and not lost:
            time.sleep(0.2)
            lost = relay.rows("SELECT reason FROM audit_events WHERE event = 'audit-lost'")
        say(f"- space freed: within {time.time() - deadline + 10:.1f} s, without a restart, the trail writes "
            f"`{lost[0][0] if lost else '(nothing)'}`")
        closes = relay.rows("SELECT reason, bytes_up, bytes_down FROM audit_events WHERE event = 'tunnel-close'")
        say(f"- the tunnel's close row, written again: " + ", ".join(f"`{r}` (up {u}, down {d})" for r, u, d in closes))
        s, st = connect_tunnel(relay.proxy[0], target)
        say(f"- a new CONNECT afterwards: {st}")
        s.close()
        relay.stop()
        say(f"- `audit verify`: {relay.verify()}")
        relay.cleanup()
    finally:
        subprocess.run(["umount", "-l", mount])
        shutil.rmtree(mount, ignore_errors=True)
    say()


def fill(socks, quiet=0.5, bound=60.0):
    """Writes every socket round-robin without blocking until no socket takes a byte for
    `quiet` seconds (or `bound` passes); returns the bytes written."""
    chunk = b"z" * 65536
    total, started, last = 0, time.time(), time.time()
    while time.time() - last < quiet and time.time() - started < bound:
        moved = False
        for s in socks:
            try:
                total += s.send(chunk)
                moved = True
            except (BlockingIOError, ConnectionResetError, BrokenPipeError):
                pass
        if moved:
            last = time.time()
        else:
            time.sleep(0.01)
    return total


def endings(socks, bound):
    """How each socket's stream ended ('reset', 'fin' or 'open'), watching all at once."""
    result = ["open"] * len(socks)
    selector = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ, i)
    deadline = time.time() + bound
    while selector.get_map() and time.time() < deadline:
        for key, _ in selector.select(timeout=0.2):
            i = key.data
            try:
                if socks[i].recv(65536):
                    continue
                result[i] = "fin"
            except BlockingIOError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                result[i] = "reset"
            selector.unregister(socks[i])
    selector.close()
    return result


def stalled_upstreams(count=200):
    say("## 5. Upstreams that stop reading")
    say()
    upstream = Server(never_read)
    relay = Relay(["listen 127.0.0.1:0", f"server 127.0.0.1:{upstream.port}", "stall-timeout 5s",
                   "max-connections-per-source 10000"])
    try:
        base = tcp_mem_pages()
        socks = []
        for _ in range(count):
            s, _ = connect_tunnel(relay.proxy[0], f"127.0.0.1:{upstream.port}")
            s.setblocking(False)
            socks.append(s)
        started = time.time()
        written = fill(socks)
        filled = time.time()
        pinned = tcp_mem_pages() - base
        own = relay_socket_bytes(relay.proc.pid)
        say(f"- {count} tunnels whose upstream never reads; each client writes until no socket takes more "
            f"({written / count / 1048576:.1f} MiB a tunnel, {filled - started:.1f} s): TCP memory "
            f"+{pinned * 4 / 1024:.0f} MiB on the host ({pinned * 4096 / count / 1048576:.1f} MiB a tunnel, over "
            f"every socket of it), {own / count / 1048576:.1f} MiB a tunnel queued in the relay's own sockets.")
        ends = endings(socks, 20)
        after = time.time()
        time.sleep(0.5)
        left = tcp_mem_pages() - base
        reasons = relay.rows("SELECT reason, count(*) FROM audit_events WHERE event = 'tunnel-close' GROUP BY reason")
        say(f"- `stall-timeout 5s` (the default is 60 s, against an idle timeout of 300 s): within "
            f"{after - filled:.1f} s {ends.count('reset')} clients saw a reset ({ends.count('open')} still open, "
            f"{ends.count('fin')} a FIN); TCP memory back to +{left * 4 / 1024:.0f} MiB; close rows: "
            + ", ".join(f"`{r}` {n}" for r, n in reasons))
        for s in socks:
            s.close()
    finally:
        relay.cleanup()
    say()


def slowloris(count=2000, per_source=500):
    say("## 6. Slowloris against `max-connections-per-source`")
    say()
    upstream = Server(echo)
    relay = Relay(["listen 127.0.0.1:0", f"server 127.0.0.1:{upstream.port}", f"max-connections-per-source {per_source}",
                   "header-timeout 3s", "refusal-summary-interval 2s"])
    socks, answers = [], {}
    started = time.time()
    for i in range(count):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.connect(("127.0.0.1", relay.proxy[0]))
        s.sendall(b"GET http://127.0.0.1/ HTTP/1.1\r\nX-Slow: ")
        socks.append(s)
    opened = time.time() - started
    t0 = time.time()
    other, status = connect_tunnel(relay.proxy[0], f"127.0.0.1:{upstream.port}", source="127.0.0.2")
    other.sendall(b"ping")
    echoed = other.recv(4) == b"ping"
    served_ms = (time.time() - t0) * 1000
    other.close()
    selector = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        selector.register(s, selectors.EVENT_READ, i)
    deadline = time.time() + 15
    while selector.get_map() and time.time() < deadline:
        for key, _ in selector.select(timeout=0.5):
            s = socks[key.data]
            try:
                data = s.recv(4096)
                answer = data.split(b"\r\n", 1)[0].decode(errors="replace").split(" ", 1)[-1] if data else "closed"
            except OSError:
                answer = "reset"
            answers[answer] = answers.get(answer, 0) + 1
            selector.unregister(s)
    pending = list(selector.get_map())
    selector.close()
    time.sleep(2.5)
    rows = relay.rows("SELECT reason, status FROM audit_events WHERE event = 'refused'")
    counted = sum(int(r.split(": ", 1)[1].split(" ", 1)[0]) for r, _ in rows if ": " in r)
    say(f"- {count} connections from 127.0.0.1 sending half a head and nothing more, with "
        f"`max-connections-per-source {per_source}`, `header-timeout 3s` (opened in {opened:.1f} s). "
        f"What they got: " + ", ".join(f"{n} × `{k}`" for k, n in sorted(answers.items(), key=lambda kv: -kv[1]))
        + f"{'' if not pending else f', {len(pending)} no answer'}.")
    say(f"- meanwhile a client from 127.0.0.2: CONNECT {status}, echo {'ok' if echoed else 'FAILED'}, in {served_ms:.0f} ms.")
    say(f"- the trail: {len(rows)} `refused` rows counting {counted} connections:")
    for reason, status in sorted(rows):
        say(f"  - `{reason}` (status {status})")
    for s in socks:
        s.close()
    relay.cleanup()
    say()


def main():
    version = subprocess.run([BINARY, "version"], capture_output=True, text=True).stdout.strip()
    say(f"# bench/faults {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    say()
    say(f"{version}; {os.uname().sysname} {os.uname().release}, {os.cpu_count()} cores; loopback only.")
    say()
    for case in (silent_truncation, sigkill_and_restart, sigterm_under_load, full_disk, stalled_upstreams, slowloris):
        started = time.time()
        try:
            case()
        except Exception as e:  # report and go on: one broken case must not hide the others
            say(f"- **case failed**: {type(e).__name__}: {e}")
            say()
        for relay in RELAYS:
            relay.cleanup()
        RELAYS.clear()
        print(f"faults: {case.__name__} took {time.time() - started:.1f} s", file=sys.stderr)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write("\n".join(OUT) + "\n")


if __name__ == "__main__":
    main()
