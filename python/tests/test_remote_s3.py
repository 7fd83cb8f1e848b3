"""s3:// datasets through ringfeed.Loader (issue 42), against the S3 test server the C++ tests use
(tests/testing/s3_signing_proxy.py: s3rver behind a proxy that checks every request's Signature
V4 with botocore), started here on loopback: a shard set named by its base name loads the local
dataset's batches; a wrong secret is refused naming the signature, never the secret."""

import os
import subprocess
from pathlib import Path

import pytest

import ringfeed
from conftest import epoch_indices, open_loader

ROOT = Path(__file__).resolve().parents[2]
PROXY = ROOT / "tests" / "testing" / "s3_signing_proxy.py"
NODE = os.environ.get("RINGFEED_NODE", "/usr/bin/node")
S3RVER = (os.environ.get("RINGFEED_S3RVER", "/opt/ringfeed/s3rver")
          + "/node_modules/s3rver/bin/s3rver.js")
REGION, BUCKET = "eu-test-1", "rf-py"
KEY_ID, SECRET = "AKIDRINGFEEDPYTHON1", "PythonSecret/0123456789abcdefghijklmnop"


def _missing() -> str:
    if not os.access(NODE, os.X_OK):
        return f"{NODE} is not installed (apt-get install nodejs)"
    if not os.access(S3RVER, os.R_OK):
        return f"{S3RVER} is not installed (tools/install-deps.sh)"
    try:
        subprocess.run(["/usr/bin/python3", "-c", "import botocore"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return "botocore is not installed for /usr/bin/python3 (apt-get install python3-botocore)"
    return ""


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "ok")


class Proxy:
    def __init__(self, data: Path) -> None:
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", str(PROXY), "--node", NODE, "--s3rver", S3RVER, "--data",
             str(data), "--region", REGION, "--credential", f"{KEY_ID}:{SECRET}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        assert first.startswith("port "), f"the S3 test server did not start: {first!r}"
        self.endpoint = f"http://127.0.0.1:{int(first.split()[1])}"

    def command(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer.startswith("ok"), answer
        return answer

    def stop(self) -> None:
        self.proc.stdin.close()  # the proxy stops s3rver and exits
        self.proc.wait(20)


@pytest.fixture(scope="module")
def store(datasets, tmp_path_factory):
    proxy = Proxy(tmp_path_factory.mktemp("s3data"))
    proxy.command(f"bucket {BUCKET}")
    local = Path(datasets.positional(shards=3))
    for f in sorted(local.parent.glob(local.stem + "-*.rfd")):
        proxy.command(f"put {BUCKET} {('sets/' + f.name).encode().hex()} {f}")
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL_S3", "AWS_REGION",
                                            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "HOME", "AWS_PROFILE", "AWS_SESSION_TOKEN")}
    os.environ.update(AWS_ENDPOINT_URL_S3=proxy.endpoint, AWS_REGION=REGION,
                      AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET,
                      HOME="/nonexistent")
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    yield str(local), f"s3://{BUCKET}/sets/{local.name}"
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    proxy.stop()


def test_a_base_name_in_a_bucket_loads_the_local_datasets_batches(store):
    local, url = store
    info = ringfeed.dataset_info(url)
    assert info.paths == tuple(url.replace(".rfd", f"-{i:05d}-of-00003.rfd") for i in range(3))
    assert info.id == ringfeed.dataset_info(local).id
    assert epoch_indices(open_loader(url, seed=3)) == epoch_indices(open_loader(local, seed=3))


def test_a_wrong_secret_is_refused_naming_the_signature(store):
    _, url = store
    os.environ["AWS_SECRET_ACCESS_KEY"] = "WrongSecret/0123456789abcdefghijklmnopqr"
    try:
        with pytest.raises(OSError) as refused:
            ringfeed.dataset_info(url)
        assert "SignatureDoesNotMatch" in str(refused.value)
        assert "WrongSecret" not in str(refused.value) and KEY_ID not in str(refused.value)
    finally:
        os.environ["AWS_SECRET_ACCESS_KEY"] = SECRET
