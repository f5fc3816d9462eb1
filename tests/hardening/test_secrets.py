"""Secrets (issue 15): every secret the run knows of — env values used by http headers,
the expanded headers, secret-named environment variables, ``.env`` values — is masked in
every output, journal line and message, in every form: as written, stripped, without
``Bearer``, repr-escaped, JSON-escaped, URL-encoded."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from agenticlens_frames import _secrets

from ._round2 import cli, stage

HERE = Path(__file__).resolve().parent

SECRETS = [
    "tok-Secret-123\n",
    "  spaced-Secret-456  ",
    "url/Sec+ret=789&x",
    "tök-ßecret-é-0",
    "quo'te\"back\\slash-1",
    "tab\tSecret-2\r",
]


def _visible_forms(secret: str) -> set[str]:
    """The forms a reader would recognise (the assertion is against all of them)."""
    core = secret.strip()
    return {
        core,
        repr(core)[1:-1],
        repr(core.encode())[2:-1],
        json.dumps(core)[1:-1],
        urllib.parse.quote(core, safe=""),
        urllib.parse.quote_plus(core),
    }


TEXTS = [
    "Illegal header value b'Bearer {b}'",
    "Illegal header value {r}",
    "GET https://x/?key={u} failed",
    "form post key={p}",
    '{{"echo": "{j}"}}',
    "plain {s} in a sentence",
    "Authorization: Bearer {s}",
    "error: {s}{s}",
]


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("template", TEXTS)
def test_mask_removes_every_form(secret, template):
    _secrets.remember([secret])
    core = secret.strip()
    text = template.format(
        b=repr(("Bearer " + secret).encode())[2:-1],
        r=repr(secret),
        u=urllib.parse.quote(core, safe=""),
        p=urllib.parse.quote_plus(core),
        j=json.dumps(core)[1:-1],
        s=core,
    )
    masked = _secrets.mask(text)
    for form in _visible_forms(secret):
        assert form not in masked, (form, masked)
    assert "***" in masked


@pytest.mark.parametrize("secret", SECRETS)
def test_mask_value_reaches_keys_and_nested_strings(secret):
    _secrets.remember([secret])
    core = secret.strip()
    value = {core: [core, {"deep": f"x{core}y"}], "n": 1}
    text = json.dumps(_secrets.mask_value(value), ensure_ascii=False)
    assert core not in text and json.dumps(core)[1:-1] not in text


def _echo_server() -> tuple[ThreadingHTTPServer, str]:
    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            auth = self.headers.get("Authorization", "")
            if body["case_id"] == "c1":  # an error page that quotes the header
                data = f"denied for {auth} / {urllib.parse.quote(auth)}".encode()
                self.send_response(500)
            else:  # a reply that echoes it
                data = json.dumps(
                    {"output": f"refund {auth}", "trace": {"metadata": {"h": auth}}}
                ).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/agent"


@pytest.mark.parametrize("secret", SECRETS)
def test_no_secret_reaches_any_output(tmp_path, monkeypatch, secret):
    server, url = _echo_server()
    try:
        manifest, suite = stage(tmp_path)
        monkeypatch.setenv("LEAK_TOKEN", secret.strip() if "\n" not in secret else secret)
        monkeypatch.setenv("LEAK_API_KEY", secret)  # secret-named: a python target reads it
        monkeypatch.setenv("LEAK_DOTENV_DIR", str(tmp_path))
        dotenv_secret = "dotenv-" + secret.strip()
        (tmp_path / ".env").write_text(f"SERVICE_PASSWORD='{dotenv_secret}'\n")
        doc = yaml.safe_load(manifest.read_text())
        doc["variants"][1] = {
            "id": "remote", "name": "Remote", "target_kind": "http", "target": url,
            "headers": {"Authorization": "Bearer ${LEAK_TOKEN}"}, "timeout_seconds": 5,
        }  # fmt: skip
        doc["variants"][2] = {
            "id": "leaky", "name": "Leaky", "target_kind": "python",
            "target": f"{HERE / 'exit_targets.py'}:leaky_target",
        }  # fmt: skip
        manifest.write_text(yaml.safe_dump(doc))
        out, run = tmp_path / "out", tmp_path / "run"
        result = cli(
            "experiment", "run", manifest, suite, "--save", out / "r.json", "--html",
            out / "r.html", "--csv", out / "v.csv", "--cases-csv", out / "c.csv",
            "--parquet", out / "pq", "--run-dir", run, "--invalid-payload", "case",
        )  # fmt: skip
        assert "Traceback" not in result.output
        assert result.exit_code in (0, 3), result.output
        files = [p for p in [*out.rglob("*"), *run.rglob("*")] if p.is_file()]
        assert len(files) > 10
        for value in (secret, dotenv_secret):
            for form in _visible_forms(value):
                assert form not in result.output, form
                for file in files:
                    data = file.read_bytes()
                    assert form.encode() not in data, (form, file)
        report = (out / "r.json").read_text()
        assert "***" in report  # the leaks were there, and masked
    finally:
        server.shutdown()
        server.server_close()
