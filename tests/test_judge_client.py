"""The chat-completions judge against a local fake OpenAI-compatible server (127.0.0.1):
the request it sends, the judgement it builds, failures as retried attempts with their
usage, and the API key never written anywhere."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.evaluators import EvaluatorRegistry, RetryPolicy
from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.judge_client import ChatJudge, ChatJudgeError
from agenticlens_frames.judges import summarize_judges
from agenticlens_frames.scoring import score_sample

KEY = "sk-test-9f8e7d6c5b4a"


class FakeOpenAI:
    """Replies in turn with the queued (status, body) pairs; records every request."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any]] = []
        self.requests: list[tuple[str, dict, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                fake.requests.append((self.path, dict(self.headers), body))
                status, reply = fake.replies.pop(0)
                data = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # polled every 50 ms, not 0.5 s: close() waits for the loop to notice shutdown
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def completion(
        self, content: str, prompt_tokens: int = 100, completion_tokens: int = 7
    ) -> None:
        self.replies.append(
            (
                200,
                {
                    "id": "c1",
                    "model": "grader-1-2026",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                    },
                },
            )
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


CASE = CaseSpec(
    id="refund", name="Refund", index=0, input={"question": "Refund?"}, expected_output="Yes"
)


def _judge(fake: FakeOpenAI, **options: Any) -> ChatJudge:
    return ChatJudge(
        base_url=fake.url,
        model="grader-1",
        prompt_template="Q: {input}\nA: {output}\nRef: {expected}\nTone: {tone}",
        verdicts={"correct": 1.0, "partial": 0.5, "wrong": 0.0},
        api_key_env="JUDGE_KEY",
        provider="fake",
        input_price_per_mtok=2.0,
        output_price_per_mtok=8.0,
        environ={"JUDGE_KEY": KEY},
        **options,
    )


ENTRY = {"name": "j", "threshold": 0.5, "required": True, "config": {"extra": {"tone": "calm"}}}


def test_request_and_judgement(fake: FakeOpenAI) -> None:
    fake.completion('{"verdict": "Partial", "reason": "misses the 30 days"}')
    got = _judge(fake, system_prompt="You grade.")(" Yes \n", CASE, normalize_trace({}), ENTRY)
    path, headers, body = fake.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert body["model"] == "grader-1" and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [
        {"role": "system", "content": "You grade."},
        {"role": "user", "content": 'Q: {"question": "Refund?"}\nA:  Yes \n\nRef: Yes\nTone: calm'},
    ]
    assert got["value"] == 0.5 and got["explanation"] == "misses the 30 days"
    meta = got["metadata"]
    # the label as configured, however the model spells it, so samples agree by it
    assert meta["verdict"] == "partial"
    assert (meta["judge_model"], meta["judge_provider"]) == ("grader-1-2026", "fake")
    assert (meta["judge_input_tokens"], meta["judge_output_tokens"]) == (100, 7)
    assert meta["judge_cost_usd"] == (100 * 2.0 + 7 * 8.0) / 1_000_000
    assert meta["judge_cost_source"] == "estimated"
    assert meta["judge_latency_ms"] >= 0


def test_score_replies_and_bad_replies(fake: FakeOpenAI) -> None:
    judge = _judge(fake)
    fake.completion('{"score": 0.25}')
    assert judge("x", CASE, normalize_trace({}), ENTRY)["value"] == 0.25
    fake.completion("I think it is fine.", prompt_tokens=50, completion_tokens=5)
    with pytest.raises(ChatJudgeError, match="replied without a JSON object") as caught:
        judge("x", CASE, normalize_trace({}), ENTRY)
    # a billed reply: its usage travels with the failure
    assert caught.value.usage["judge_input_tokens"] == 50
    fake.completion('{"verdict": "great"}')
    with pytest.raises(ChatJudgeError, match=r"gave verdict 'great', not one of"):
        judge("x", CASE, normalize_trace({}), ENTRY)


def test_a_reply_that_is_no_chat_completion_is_quoted_with_what_to_check(
    fake: FakeOpenAI,
) -> None:
    """The message said only "not a chat completion": a truncated body, a server's error
    object and a web page at the wrong path read alike, with nothing to check."""
    judge = _judge(fake)
    truncated = '{"choices": [{"message": {"content": "{\\"score\\": 0.5'
    replies = [
        (200, truncated, repr(truncated)),
        (200, {"detail": f"oops {KEY}"}, "oops ***"),  # a gateway echoing the key
        (404, "<html>\n<h1>Not Found</h1></html>", "<html> <h1>Not Found</h1></html>"),
    ]
    for status, body, quoted in replies:
        fake.replies.append((status, body))
        with pytest.raises(ChatJudgeError) as caught:
            judge("x", CASE, normalize_trace({}), ENTRY)
        message = str(caught.value)
        assert f"is base_url '{fake.url}' the API root" in message, message
        assert quoted in message and "\n" not in message and KEY not in message


@pytest.mark.parametrize(
    ("environ", "held"), [({"JUDGE_KEY": KEY}, "holds a key"), ({}, "is empty")]
)
def test_a_refused_key_names_where_it_is_read(
    fake: FakeOpenAI, environ: dict[str, str], held: str
) -> None:
    """An HTTP 401 said only the server's words: not which variable the key comes from."""
    judge = ChatJudge(
        base_url=fake.url,
        model="grader-1",
        prompt_template="{output}",
        api_key_env="JUDGE_KEY",
        environ=environ,
    )
    fake.replies.append((401, {"error": {"message": "invalid api key"}}))
    with pytest.raises(ChatJudgeError) as caught:
        judge("x", CASE, normalize_trace({}), ENTRY)
    assert str(caught.value).startswith(
        f"chat judge 'grader-1' answered HTTP 401 (the key is read from $JUDGE_KEY, which {held}"
    )
    assert KEY not in str(caught.value)


def test_failures_are_retried_and_the_key_never_appears(fake: FakeOpenAI) -> None:
    registry = EvaluatorRegistry()
    judge = _judge(fake)
    registry.register_judge("grader", judge, version="g1", retry=RetryPolicy(max_attempts=3))
    fake.replies.append((500, {"error": f"upstream failed for key {KEY}"}))
    fake.completion("not json", prompt_tokens=40, completion_tokens=3)
    fake.completion('{"verdict": "correct", "reason": "right"}')
    ref = EvaluatorRef("grader", 0.5, config={"extra": {"tone": "calm"}})
    case = CaseSpec(id="refund", name="Refund", index=0, evaluators=(ref,))
    sink = CheckColumns()
    result = score_sample(case, "Yes", normalize_trace({}), sink, 0, registry)
    assert result.passed is True and len(fake.requests) == 3
    meta = json.loads(sink.columns()["metadata"][0])
    assert meta["judge_attempts"] == 3
    # the second (billed) attempt's tokens are added to the delivered score's
    assert (meta["judge_input_tokens"], meta["judge_output_tokens"]) == (100 + 40, 7 + 3)
    # three failures: unavailable, the error without the key
    for _ in range(3):
        fake.replies.append((500, {"error": f"bad key {KEY}"}))
    sink = CheckColumns()
    score_sample(case, "Yes", normalize_trace({}), sink, 0, registry)
    columns = sink.columns()
    text = json.dumps(columns) + repr(judge) + repr(registry)
    assert KEY not in text
    meta = json.loads(columns["metadata"][0])
    assert meta["judge_status"] == "unavailable"
    assert meta["judge_error"].startswith("ChatJudgeError: chat judge 'grader-1' answered HTTP 500")
    assert "***" in meta["judge_error"]
    block = summarize_judges([("refund", False, meta)])
    assert block is not None and block["unavailable_cases"] == ["refund"]


def test_a_template_key_the_case_lacks_is_named(fake: FakeOpenAI) -> None:
    with pytest.raises(ChatJudgeError, match=r"names \{tone\}, which case 'refund' does not give"):
        _judge(fake)("x", CASE, normalize_trace({}), {"config": {}})
    assert fake.requests == []


def test_configuration_is_checked_up_front() -> None:
    with pytest.raises(InputError, match=r"must contain \{output\}"):
        ChatJudge(base_url="http://x", model="m", prompt_template="{input}")
    with pytest.raises(InputError, match="http"):
        ChatJudge(base_url="ftp://x", model="m", prompt_template="{output}")
    with pytest.raises(InputError, match="outside"):
        ChatJudge(base_url="http://x", model="m", prompt_template="{output}", verdicts={"a": 2})


def test_three_spellings_of_one_verdict_agree(fake: FakeOpenAI) -> None:
    # Recorded as spelled, "Correct", "correct" and "CORRECT" agreed 1 in 3 (33 %).
    registry = EvaluatorRegistry()
    registry.register_judge("grader", _judge(fake), version="g1", samples=3)
    for label in ("Correct", "correct", "CORRECT"):
        fake.completion(json.dumps({"verdict": label, "reason": "ok"}))
    ref = EvaluatorRef("grader", 0.5, config={"extra": {"tone": "calm"}})
    case = CaseSpec(id="refund", name="Refund", index=0, evaluators=(ref,))
    sink = CheckColumns()
    score_sample(case, "Yes", normalize_trace({}), sink, 0, registry)
    meta = json.loads(sink.columns()["metadata"][0])
    assert meta["judge_verdicts"] == ["correct"] * 3 and meta["judge_agreement"] == 1.0


def test_a_reply_quoting_the_key_or_a_null_reason_is_written_safely(fake: FakeOpenAI) -> None:
    # A gateway echoing the request headers put "Bearer <key>" into the error and the
    # explanation; a null reason was the text "None".
    judge = _judge(fake)
    fake.completion(f"echo: Authorization: Bearer {KEY}")
    with pytest.raises(ChatJudgeError) as caught:
        judge("x", CASE, normalize_trace({}), ENTRY)
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    fake.completion(json.dumps({"verdict": "correct", "reason": f"header was Bearer {KEY}"}))
    assert KEY not in judge("x", CASE, normalize_trace({}), ENTRY)["explanation"]
    fake.completion(json.dumps({"verdict": "correct", "reason": None}))
    assert judge("x", CASE, normalize_trace({}), ENTRY)["explanation"] == ""


def test_a_reply_that_keeps_trickling_times_out_as_a_whole() -> None:
    """httpx's timeout bounds each read: a server sending a byte every 0.2 s never timed
    out (the run could hang for good, the retry policy never got control)."""
    import time

    import httpx

    class Trickle(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for _ in range(50):
                time.sleep(0.05)
                yield b" "

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Trickle())

    judge = ChatJudge(
        base_url="http://judge.invalid/v1",
        model="grader-1",
        prompt_template="{output}",
        timeout_seconds=0.5,
        transport=httpx.MockTransport(handler),
    )
    with pytest.raises(ChatJudgeError, match=r"timed out after 0\.5 s"):
        judge("x", CASE, normalize_trace({}), {"config": {}})


def test_a_reply_larger_than_the_cap_is_refused_not_held(monkeypatch) -> None:
    """A judge reply was read whole, however large (a live target's has a 16 MiB cap): a
    misconfigured base_url streaming a file filled memory. The read stops past the cap,
    chunks already read included, and says what to check."""
    import httpx

    from agenticlens_frames import judge_client

    monkeypatch.setattr(judge_client, "MAX_REPLY_BYTES", 2**20)
    sent = []

    class Endless(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            while True:  # stops only when the client does
                sent.append(64 * 1024)
                yield b"x" * (64 * 1024)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Endless())

    judge = ChatJudge(
        base_url="http://judge.invalid/v1",
        model="grader-1",
        prompt_template="{output}",
        transport=httpx.MockTransport(handler),
    )
    with pytest.raises(ChatJudgeError, match=r"reply larger than 1 MiB .*API root"):
        judge("x", CASE, normalize_trace({}), {"config": {}})
    assert sum(sent) <= 2**20 + 64 * 1024


def test_a_json_object_in_a_code_fence_or_after_a_sentence_is_read(fake: FakeOpenAI) -> None:
    # Each was a failed, billed attempt (retried, then unavailable).
    judge = _judge(fake)
    fake.completion('```json\n{"verdict": "wrong", "reason": "off"}\n```')
    assert judge("x", CASE, normalize_trace({}), ENTRY)["value"] == 0.0
    fake.completion('Sure! Here it is: {"score": 0.75} Hope this helps.')
    assert judge("x", CASE, normalize_trace({}), ENTRY)["value"] == 0.75
