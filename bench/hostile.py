"""Hostile clients for bench/hostile.sh (issue 41): holds, for DURATION seconds,
  - SLOW_HEADS connections that send half a request head and then nothing,
  - UPLOADS anonymous requests that declare a 10 MiB body and send it at 100 bytes/s,
  - FLOOD connections that each send a 60 KiB anonymous body as fast as they can, again
    and again (the largest body an anonymous client may send),
and prints how many connections the server closed or refused on the way.
  python3 bench/hostile.py http://127.0.0.1:PORT DURATION [SLOW_HEADS UPLOADS FLOOD]"""
import asyncio
import sys
import time

URL, DURATION = sys.argv[1], float(sys.argv[2])
SLOW_HEADS, UPLOADS, FLOOD = (int(v) for v in (sys.argv[3:6] or (200, 200, 16)))
HOST, PORT = URL.split("//")[1].split(":")
closed = {"slow_head": 0, "upload": 0, "flood_answers": 0, "errors": 0}


async def slow_head(end):
    try:
        r, w = await asyncio.open_connection(HOST, int(PORT))
        w.write(b"GET /api/status HTTP/1.1\r\nHost: x\r\nX-Half: ")
        await w.drain()
        await asyncio.wait_for(r.read(1), timeout=max(0.1, end - time.time()))
        closed["slow_head"] += 1
    except (asyncio.TimeoutError, OSError):
        pass


async def upload(end):
    try:
        r, w = await asyncio.open_connection(HOST, int(PORT))
        w.write(b"POST /api/slides/assets/upload HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: image/png\r\nContent-Length: 10485760\r\n\r\n")
        while time.time() < end:
            w.write(b"x" * 100)
            await w.drain()
            try:
                if await asyncio.wait_for(r.read(1), timeout=1.0):
                    closed["upload"] += 1
                    return
            except asyncio.TimeoutError:
                pass
    except OSError:
        closed["upload"] += 1


async def flood(end):
    body = b"{" + b'"a":"' + b"x" * (60 * 1024) + b'"}'
    head = (b"POST /api/users/update HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    while time.time() < end:
        try:
            r, w = await asyncio.open_connection(HOST, int(PORT))
            while time.time() < end:
                w.write(head + body)
                await w.drain()
                line = await r.readline()
                if not line:
                    break
                length = 0
                while (h := await r.readline()) not in (b"\r\n", b""):
                    if h.lower().startswith(b"content-length:"):
                        length = int(h.split(b":")[1])
                await r.readexactly(length)
                closed["flood_answers"] += 1
            w.close()
        except (OSError, asyncio.IncompleteReadError):
            closed["errors"] += 1
            await asyncio.sleep(0.01)


async def main():
    end = time.time() + DURATION
    tasks = [slow_head(end) for _ in range(SLOW_HEADS)]
    tasks += [upload(end) for _ in range(UPLOADS)]
    tasks += [flood(end) for _ in range(FLOOD)]
    await asyncio.gather(*tasks)
    print("attackers:", closed)


asyncio.run(main())
