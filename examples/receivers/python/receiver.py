"""A webhook receiver that verifies Switchyard's signatures, with Python's standard
library only. Run:  WEBHOOK_SECRET=... python3 receiver.py [PORT]

It accepts a request when either signature verifies:
  X-Signature        lowercase hex HMAC-SHA1 of the raw body, key = the secret as written
  webhook-signature  Standard Webhooks: "v1,<base64 HMAC-SHA256>" entries, space-separated;
                     key = base64-decoded secret after "whsec_",
                     message = "<webhook-id>.<webhook-timestamp>.<raw body>"
and answers 204; otherwise 401 with the reason. It prints each verified event.
"""

import base64
import binascii
import hashlib
import hmac
import os
import re
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 5 * 60  # Standard Webhooks: refuse replays of old requests
MAX_BODY_BYTES = 1024 * 1024

SECRET = os.environ.get("WEBHOOK_SECRET", "")
if not SECRET:
    sys.exit("set WEBHOOK_SECRET to the destination's sharedSecret, e.g. WEBHOOK_SECRET=whsec_... python3 receiver.py")
PORT = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PORT", "4000"))
HOST = os.environ.get("HOST", "127.0.0.1")


def standard_key(secret):
    """The Standard Webhooks key: the base64 after "whsec_", or None if it is not base64."""
    encoded = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None


STANDARD_KEY = standard_key(SECRET)
if STANDARD_KEY is None:
    print("note: WEBHOOK_SECRET is not base64 (whsec_...), so only X-Signature can verify", flush=True)


def same_text(a, b):
    """Compares in constant time, so the answer's timing tells nothing about the expected value."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def check_x_signature(headers, body):
    given = headers.get("X-Signature")
    if given is None:
        return None
    expected = hmac.new(SECRET.encode("utf-8"), body, hashlib.sha1).hexdigest()
    return "ok" if same_text(expected, given) else "X-Signature does not match"


def check_standard(headers, body):
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if signatures is None:
        return None
    if STANDARD_KEY is None:
        return "webhook-signature cannot be checked: WEBHOOK_SECRET is not a whsec_ secret"
    if msg_id is None or timestamp is None or not re.fullmatch(r"\d+", timestamp):
        return "webhook-id or webhook-timestamp missing or malformed"
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return "webhook-timestamp is more than 5 minutes off"
    signed = f"{msg_id}.{timestamp}.".encode("utf-8") + body
    expected = base64.b64encode(hmac.new(STANDARD_KEY, signed, hashlib.sha256).digest()).decode("ascii")
    # One entry per secret while the sender rotates; other versions than v1 are skipped.
    for entry in signatures.split(" "):
        if entry.startswith("v1,") and same_text(expected, entry[3:]):
            return "ok"
    return "webhook-signature does not match"


def verify(headers, body):
    """(scheme that verified, None) or (None, the reasons none did)."""
    results = {"X-Signature": check_x_signature(headers, body), "Standard Webhooks": check_standard(headers, body)}
    for scheme, result in results.items():
        if result == "ok":
            return scheme, None
    reasons = [r for r in results.values() if r is not None]
    return None, "; ".join(reasons) if reasons else "no X-Signature or webhook-signature header"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            return self.answer(413, "body too large")
        # Verify the raw bytes as received: parsing and re-serializing JSON in Python
        # changes them (spaces, escapes), and the signature is over Switchyard's bytes.
        body = self.rfile.read(length)
        scheme, reason = verify(self.headers, body)
        if scheme is None:
            print(f"refused ({reason}): POST {self.path}", flush=True)
            return self.answer(401, reason)
        print(f"verified by {scheme}: {body.decode('utf-8', 'replace')}", flush=True)
        self.answer(204)

    def answer(self, status, text=None):
        data = b"" if text is None else f"{text}\n".encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        if status != 204:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass  # one line per request is printed above


def main():
    server = ThreadingHTTPServer((HOST, PORT), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
