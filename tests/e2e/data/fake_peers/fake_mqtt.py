"""A tiny MQTT 3.1.1 broker for shootout run's tests: CONNECT, SUBSCRIBE
(with + and #), PUBLISH at QoS 0, PINGREQ, DISCONNECT. --drop: never
delivers a message; --die-after N: exits (status 1) on its Nth connection."""

import argparse
import asyncio
import os


def matches(filt, topic):
    f, t = filt.split("/"), topic.split("/")
    for i, part in enumerate(f):
        if part == "#":
            return True
        if i >= len(t) or (part != "+" and part != t[i]):
            return False
    return len(f) == len(t)


class Broker:
    def __init__(self, drop, die_after):
        self.drop, self.die_after, self.conns = drop, die_after, 0
        self.subs = {}  # writer -> [filters]

    async def packet(self, reader):
        head = await reader.readexactly(1)
        mult, length = 1, 0
        while True:
            b = (await reader.readexactly(1))[0]
            length += (b & 127) * mult
            mult *= 128
            if b < 128:
                break
        return head[0], await reader.readexactly(length)

    @staticmethod
    def frame(first, body):
        out, n = bytearray([first]), len(body)
        while True:
            b, n = n % 128, n // 128
            out.append(b | (128 if n else 0))
            if not n:
                break
        return bytes(out) + body

    async def serve(self, reader, writer):
        self.conns += 1
        if self.die_after and self.conns >= self.die_after:
            os._exit(1)
        try:
            while True:
                first, body = await self.packet(reader)
                kind = first >> 4
                if kind == 1:  # CONNECT
                    writer.write(b"\x20\x02\x00\x00")
                elif kind == 8:  # SUBSCRIBE
                    pid, i, granted = body[:2], 2, bytearray()
                    while i < len(body):
                        n = int.from_bytes(body[i:i + 2], "big")
                        self.subs.setdefault(writer, []).append(body[i + 2:i + 2 + n].decode())
                        i += 2 + n + 1
                        granted.append(0)
                    writer.write(self.frame(0x90, pid + bytes(granted)))
                elif kind == 3 and not self.drop:  # PUBLISH, QoS 0
                    n = int.from_bytes(body[:2], "big")
                    topic = body[2:2 + n].decode()
                    out = self.frame(0x30, body)
                    for w, filters in list(self.subs.items()):
                        if any(matches(f, topic) for f in filters):
                            w.write(out)
                elif kind == 12:  # PINGREQ
                    writer.write(b"\xd0\x00")
                elif kind == 14:  # DISCONNECT
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self.subs.pop(writer, None)
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--drop", action="store_true")
    ap.add_argument("--die-after", type=int, default=0)
    a = ap.parse_args()
    b = Broker(a.drop, a.die_after)
    server = await asyncio.start_server(b.serve, "127.0.0.1", a.port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
