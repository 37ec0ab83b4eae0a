"""A client generated from plinth's OpenAPI document by openapi-python-client drives a
whole flow, as an app would: sign up, verify the email (the code from the outbox), create
a deck, upload an image in one request, name it in the deck's markdown, export it to PDF,
wait for the job, download the PDF. Run by tests/api/wire.rs
with the generated package `plinth_client` on PYTHONPATH.

Usage: flow.py BASE_URL OUTBOX_DIR EMAIL
"""
import io
import pathlib
import re
import struct
import sys
import time
import zlib

import httpx

from plinth_client import AuthenticatedClient, Client
from plinth_client.api.additions import slides_assets_upload
from plinth_client.api.slide_decks import (
    slides_create, slides_exports_create, slides_jobs_by_id, slides_update,
)
from plinth_client.api.users import users_authenticate, users_verify
from plinth_client.types import File
from plinth_client.models import (
    Error,
    SlidesCreateDeckFromMarkdown,
    SlidesExportsCreateBody,
    ExportFormat,
    SlidesUpdateDeckUpdateWithMarkdown,
    UsersAuthenticateBody,
    UsersVerifyBody,
)

BASE, OUTBOX, EMAIL = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]


def ok(answer, what):
    if answer is None or isinstance(answer, Error):
        sys.exit(f"{what} failed: {answer}")
    return answer


def code_from_outbox(to):
    deadline = time.time() + 20
    while time.time() < deadline:
        for f in sorted(OUTBOX.glob("*.eml")):
            text = f.read_text()
            if f"To: {to}" in text and "?code=" in text:
                return re.search(r"\?code=([A-Za-z0-9]+)", text).group(1)
        time.sleep(0.05)
    sys.exit("no verification email")


def png(width, height):
    """A valid RGB PNG of a colour ramp (no imaging library needed)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes((x * 7 + y) % 256 for x in range(width * 3)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def authed(key):
    return AuthenticatedClient(base_url=BASE, token=key, prefix="", auth_header_name="x-api-key")


signed = ok(users_authenticate.sync(
    client=Client(base_url=BASE),
    body=UsersAuthenticateBody(email=EMAIL, password="correct horse battery"),
), "sign-up")
assert signed.existing is False, signed
# Verify (the code confirms this sign-up and its password; the sign-up key is not
# needed); the first verification rotates the key.
verified = ok(users_verify.sync(
    client=authed(signed.user.key), body=UsersVerifyBody(code=code_from_outbox(EMAIL))
), "verify")
assert verified.user.verified is True and verified.user.level == 10, verified
client = authed(verified.user.key)

# Ids are UUIDs in answers (`format: uuid`, so Python UUIDs); requests take them as text.
deck = ok(slides_create.sync(
    client=client, body=SlidesCreateDeckFromMarkdown(markdown="# From a generated client\n\n- one\n- two\n"),
), "deck create")
# One request: the file as the body, its type from the name.
asset = ok(slides_assets_upload.sync(
    client=client, deck_id=str(deck.id), file="chart.png",
    body=File(payload=io.BytesIO(png(120, 80)), file_name="chart.png"),
), "image upload")
assert asset.status == "ready" and asset.width == 120, asset
ok(slides_update.sync(client=client, body=SlidesUpdateDeckUpdateWithMarkdown(
    id=str(deck.id), expected_version=1, markdown="# From a generated client\n\n![](chart.png)\n",
)), "deck update")
job = ok(slides_exports_create.sync(
    client=client, body=SlidesExportsCreateBody(deck_id=str(deck.id), format_=ExportFormat.PDF),
), "export")
deadline = time.time() + 60
while job.status not in ("succeeded", "failed", "cancelled"):
    assert time.time() < deadline, job
    job = ok(slides_jobs_by_id.sync(str(job.id), client=client, deck_id=str(deck.id), wait="30"),
             "job read")
assert job.status == "succeeded", job
url = job.artifacts[0].url
pdf = httpx.get(url).content
assert pdf.startswith(b"%PDF"), pdf[:20]
print(f"deck {deck.id} job {job.id} pdf {len(pdf)} bytes")
