#!/usr/bin/python3
"""The S3 test server of tests/testing/s3_test_server.h: s3rver behind a proxy that checks SigV4.

s3rver (npm) implements S3's objects, ranges, listings and errors, but accepts any Signature V4.
This proxy sits in front of it on loopback and checks every request's signature the way S3 does,
recomputed with botocore's own signer (S3SigV4Auth: canonical request, string to sign, signing
key) from the secret it was given for the request's access key id; a request that fails is
answered with S3's error document and status (403 SignatureDoesNotMatch, InvalidAccessKeyId,
InvalidToken, ...), echoing the AWSAccessKeyId and StringToSign as S3 does, so that a client's
message can be checked not to repeat them. A request that passes goes to s3rver, its
Authorization rewritten to s3rver's own account (S3RVER).

Lifetime: it starts s3rver as its child (killed with the proxy however the proxy ends:
PR_SET_PDEATHSIG) and serves until its stdin closes (the test process exiting closes it), then
stops s3rver and exits. Commands, one a line on stdin, each answered
with one line on stdout ("ok ..." or "error ..."):
  bucket NAME                   creates a bucket
  put BUCKET KEY_HEX FILE       puts FILE's bytes at the key (hex of its UTF-8 bytes)
  stats                         "ok {json}": requests seen, refused, and the last request's
                                signed headers and whether it carried x-amz-security-token
The first line it prints is "port N": where it listens.

Usage: s3_signing_proxy.py --node NODE --s3rver S3RVER_JS --data DIR --region R
           --credential KEY_ID:SECRET[:SESSION_TOKEN] ...
"""
import argparse
import ctypes
import datetime
import http.client
import http.server
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class State:
    def __init__(self, args, upstream_port):
        self.region = args.region
        self.upstream_port = upstream_port
        self.credentials = {}  # key id -> (secret, token or None)
        for c in args.credential:
            parts = c.split(":", 2)
            self.credentials[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None)
        self.lock = threading.Lock()
        self.requests = 0
        self.refused = 0
        self.last = {}


def error_document(code, message, extra=None):
    body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>" % (
        code, escape(message))
    for k, v in (extra or {}).items():
        body += "<%s>%s</%s>" % (k, escape(v), k)
    return (body + "<RequestId>0</RequestId></Error>").encode()


class Refused(Exception):
    def __init__(self, status, code, message, extra=None):
        super().__init__(code)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def check_signature(state, method, path, headers):
    """Raises Refused where S3 would refuse the request's authentication."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        raise Refused(403, "AccessDenied", "Access Denied (the request is not signed)")
    fields = {}
    for part in auth[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        fields[k] = v
    scope = fields.get("Credential", "").split("/")
    signed = fields.get("SignedHeaders", "").split(";")
    provided = fields.get("Signature", "")
    if len(scope) != 5 or scope[4] != "aws4_request" or not provided:
        raise Refused(400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
    key_id, date, region, service = scope[:4]
    if key_id not in state.credentials:
        raise Refused(403, "InvalidAccessKeyId",
                      "The AWS Access Key Id you provided does not exist in our records.",
                      {"AWSAccessKeyId": key_id})
    if region != state.region or service != "s3":
        raise Refused(400, "AuthorizationHeaderMalformed",
                      "the region '%s' is wrong; expecting '%s'" % (region, state.region))
    for required in ("host", "x-amz-date", "x-amz-content-sha256"):
        if required not in signed or headers.get(required) is None:
            raise Refused(400, "InvalidRequest",
                          "Missing required header for this request: " + required)
    secret, token = state.credentials[key_id]
    sent_token = headers.get("x-amz-security-token")
    if token != sent_token or (token and "x-amz-security-token" not in signed):
        raise Refused(403, "InvalidToken", "The provided token is malformed or otherwise invalid.")
    amz_date = headers["x-amz-date"]
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    if abs((datetime.datetime.utcnow() - when).total_seconds()) > 900 or date != amz_date[:8]:
        raise Refused(403, "RequestTimeTooSkewed",
                      "The difference between the request time and the current time is too large.")
    # S3 signs the canonical form of the path: each segment of the decoded key encoded again.
    raw_path, _, query = path.partition("?")
    canonical_path = urllib.parse.quote(urllib.parse.unquote(raw_path), safe="/~")
    url = "http://" + headers["host"] + canonical_path + ("?" + query if query else "")
    request = AWSRequest(method=method, url=url,
                         headers={h: headers[h] for h in signed if headers.get(h) is not None})
    request.context["timestamp"] = amz_date
    signer = S3SigV4Auth(Credentials(key_id, secret, token), "s3", state.region)
    canonical = signer.canonical_request(request)
    string_to_sign = signer.string_to_sign(request, canonical)
    if signer.signature(string_to_sign, request) != provided:
        raise Refused(403, "SignatureDoesNotMatch",
                      "The request signature we calculated does not match the signature you "
                      "provided. Check your key and signing method.",
                      {"AWSAccessKeyId": key_id, "StringToSign": string_to_sign,
                       "SignatureProvided": provided, "CanonicalRequest": canonical})
    return signed, sent_token is not None


def make_handler(state):
    local = threading.local()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, headers, body):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            record = {"method": self.command, "path": self.path}
            try:
                signed, token = check_signature(state, self.command, self.path, self.headers)
                record.update(verdict="ok", signed=signed, token=token)
            except Refused as r:
                record.update(verdict=r.code)
                with state.lock:
                    state.requests += 1
                    state.refused += 1
                    state.last = record
                return self.answer(r.status, [("Content-Type", "application/xml")],
                                   error_document(r.code, r.message, r.extra))
            with state.lock:
                state.requests += 1
                state.last = record
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=S3RVER/%s, SignedHeaders=%s, " \
                "Signature=0" % ("/".join(["19700101", state.region, "s3", "aws4_request"]),
                                 ";".join(signed))
            for attempt in range(2):  # a kept connection s3rver closed: once more on a new one
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection("127.0.0.1", state.upstream_port)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    break
                except (http.client.HTTPException, OSError):
                    local.conn = None
                    if attempt == 1:
                        raise
            out = [(k, v) for k, v in resp.getheaders()
                   if k.lower() not in HOP_HEADERS and k.lower() != "content-length"]
            if self.command == "HEAD":
                out.append(("Content-Length", resp.getheader("Content-Length", "0")))
                self.send_response(resp.status)
                for k, v in out:
                    self.send_header(k, v)
                self.end_headers()
                return
            self.answer(resp.status, out, data)

        do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_any

    return Handler


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client closing its connection (a test's fetcher going away) is no error."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            super().handle_error(request, client_address)


def die_with_parent():
    """s3rver gets SIGKILL when this proxy goes, however it goes (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upstream(state, method, path, body=b""):
    conn = http.client.HTTPConnection("127.0.0.1", state.upstream_port, timeout=10)
    conn.request(method, path, body=body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def command(state, line):
    words = line.split()
    if words[:1] == ["bucket"] and len(words) == 2:
        status, data = upstream(state, "PUT", "/" + words[1])
    elif words[:1] == ["put"] and len(words) == 4:
        key = bytes.fromhex(words[2]).decode("utf-8")
        with open(words[3], "rb") as f:
            status, data = upstream(state, "PUT", "/%s/%s" % (
                words[1], urllib.parse.quote(key, safe="/~")), f.read())
    elif words == ["stats"]:
        with state.lock:
            return "ok " + json.dumps({"requests": state.requests, "refused": state.refused,
                                       "last": state.last})
    else:
        return "error unknown command"
    return "ok" if status == 200 else "error HTTP %d %s" % (status, data[:200])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--node", required=True)
    p.add_argument("--s3rver", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--credential", action="append", default=[])
    args = p.parse_args()
    port = free_port()
    # s3rver's continuation tokens are DES-encrypted, which Node 17 and later (OpenSSL 3) refuse
    # without the legacy provider: every listing's second page would be a 500.
    child = subprocess.Popen([args.node, "--openssl-legacy-provider", args.s3rver, "-d", args.data, "-a", "127.0.0.1",
                              "-p", str(port), "-s", "--no-vhost-buckets"],
                             stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                             preexec_fn=die_with_parent)
    try:
        until = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if child.poll() is not None or time.time() > until:
                    print("error s3rver did not start", flush=True)
                    return 1
                time.sleep(0.02)
        state = State(args, port)
        server = QuietServer(("127.0.0.1", 0), make_handler(state))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print("port %d" % server.server_address[1], flush=True)
        for line in sys.stdin:
            try:
                print(command(state, line.strip()), flush=True)
            except Exception as e:  # one line, never a crash: the test reads one line back
                print("error %s" % str(e).replace("\n", " "), flush=True)
        return 0
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    sys.exit(main())
