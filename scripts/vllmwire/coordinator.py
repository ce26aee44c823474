"""Sockets for fake_frontend.py, made as vLLM's make_zmq_socket makes them,
and a fake DPCoordinator (coordinator.py process_input_socket, stats only;
non-MoE: no waves), run in a thread."""

from __future__ import annotations

import threading
import time

import msgspec
import zmq

from structs import EngineCoreOutputs, MsgpackDecoder


def zsock(ctx, kind, path, bind):
    s = ctx.socket(kind)
    if kind in (zmq.PULL, zmq.DEALER, zmq.ROUTER):
        s.setsockopt(zmq.RCVHWM, 0)
    if kind in (zmq.PUSH, zmq.DEALER, zmq.ROUTER):
        s.setsockopt(zmq.SNDHWM, 0)
    if kind == zmq.XPUB:
        s.setsockopt(zmq.XPUB_VERBOSE, 1)
    s.setsockopt(zmq.LINGER, 0)
    if bind:
        s.bind(path)
    else:
        s.connect(path)
    return s


def endpoint(s) -> str:
    return s.getsockopt(zmq.LAST_ENDPOINT).decode()


class Coordinator(threading.Thread):
    """DPCoordinator.process_input_socket, stats only (non-MoE: no waves)."""

    def __init__(self, ctx, host, n_engines):
        super().__init__(daemon=True)
        self.ctx, self.n = ctx, n_engines
        self.publish_front = zsock(ctx, zmq.XPUB, "inproc://fake-coord-front", True)
        self.output_back = zsock(ctx, zmq.PULL, f"tcp://{host}:0", True)
        self.publish_back = zsock(ctx, zmq.XPUB, f"tcp://{host}:0", True)
        self.stop = threading.Event()
        self.error: str | None = None
        self.stats_received = 0

    def run(self):
        dec = MsgpackDecoder(EngineCoreOutputs)
        counts = [[0, 0, 0.0] for _ in range(self.n)]
        subs = 0
        poller = zmq.Poller()
        for s in (self.publish_front, self.publish_back, self.output_back):
            poller.register(s, zmq.POLLIN)
        changed, last_pub = False, 0.0
        try:
            while not self.stop.is_set():
                ev = dict(poller.poll(100))
                if self.publish_back in ev:
                    msg = self.publish_back.recv()
                    if msg == b"\x01":
                        subs += 1
                        if subs == self.n:
                            self.publish_back.send(b"READY")
                        elif subs > self.n:
                            self.publish_back.send(b"READY")
                if self.publish_front in ev:
                    self.publish_front.recv()  # subscriptions
                if self.output_back in ev:
                    outs = dec.decode(self.output_back.recv_multipart())
                    assert not outs.outputs and outs.utility_output is None
                    st = outs.scheduler_stats
                    if st is not None and outs.engine_index < self.n:
                        counts[outs.engine_index] = [st.num_waiting_reqs, st.num_running_reqs,
                                                     st.kv_cache_usage]
                        self.stats_received += 1
                        changed = True
                now = time.monotonic()
                if changed and now - last_pub >= 0.1:
                    self.publish_front.send(msgspec.msgpack.encode((counts, 0, False)))
                    changed, last_pub = False, now
        except Exception as e:  # noqa: BLE001
            self.error = f"coordinator: {e!r}"
