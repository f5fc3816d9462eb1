"""A ready-made judge: any OpenAI-compatible chat-completions endpoint, as a judge function.

:class:`ChatJudge` formats a rubric prompt with the case and the output, asks the model for
a JSON verdict, and returns a judgement with the judge's model, provider, tokens, time and
(if prices are given) estimated cost, ready for
:meth:`~agenticlens_frames.evaluators.EvaluatorRegistry.register_judge`. The API key is
read from an environment variable when the judge is called and is never written anywhere:
not in scores, not in errors, not in ``repr``.

Examples
--------
>>> judge = ChatJudge(
...     base_url="http://127.0.0.1:9/v1", model="grader-1",
...     prompt_template="Question: {input}\\nAnswer: {output}\\nReply in JSON.",
...     verdicts={"correct": 1.0, "partial": 0.5, "wrong": 0.0},
... )
>>> judge
ChatJudge(model='grader-1', base_url='http://127.0.0.1:9/v1', api_key_env='OPENAI_API_KEY')
"""

from __future__ import annotations

import json
import os
import string
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._deprecate import class_keyword_hints
from .errors import InputError

if TYPE_CHECKING:
    import httpx

    from .formats.model import CaseSpec
    from .formats.traces import Trace

__all__ = ["ChatJudge", "ChatJudgeError"]

_NO_REFERENCE = "(no reference answer provided)"
_NO_INPUT = "(no input provided)"
_MASK = "***"
#: HTTP statuses whose message says what to check (the endpoint, the key).
_HINTED = frozenset({401, 403, 404, 405})
#: Largest judge reply read, in bytes (a chat completion is kilobytes; a live target's
#: reply has the same default cap): more is refused, not held in memory.
MAX_REPLY_BYTES = 16 * 1024 * 1024


class ChatJudgeError(Exception):
    """A judge call that failed. ``usage`` (when the model answered) is the call's usage,
    so a billed but unusable reply still counts in the judge's cost and tokens."""

    def __init__(self, message: str, usage: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if usage is not None:
            self.usage = usage


@class_keyword_hints(skip=("prompt",))
class ChatJudge:
    """An LLM judge backed by an OpenAI-compatible ``/chat/completions`` endpoint.

    Parameters
    ----------
    base_url
        The API root, e.g. ``https://api.openai.com/v1`` or a local server's.
    model
        The model to ask; recorded as ``judge_model``.
    prompt_template
        A :meth:`str.format` template with ``{output}`` (the raw output), ``{input}``,
        ``{expected}`` (the entry's ``config.reference`` or the case's expected output) and
        any key of the entry's ``config.extra`` mapping.
    verdicts
        Verdict label → value in [0, 1]. The model replies with a JSON object holding
        ``verdict`` (one of these labels) or ``score`` (a number in [0, 1]), and
        optionally ``reason``.
    api_key_env
        The environment variable holding the API key (read at each call; an empty or
        missing variable sends no ``Authorization`` header, for local servers).
    system_prompt
        An optional system message.
    provider
        Recorded as ``judge_provider``.
    input_price_per_mtok, output_price_per_mtok
        USD per million tokens; when both are given each score records an *estimated*
        ``judge_cost_usd``.
    timeout_seconds
        Whole-request timeout.
    temperature, max_tokens
        Sent with the request (``max_tokens`` only when given).
    json_mode
        Ask for ``response_format: {"type": "json_object"}``.
    transport
        An ``httpx`` transport (tests pass a mock); default: the network.
    environ
        Where the key is looked up (default ``os.environ``).

    Examples
    --------
    A judge called on one output, with a stand-in for the endpoint (an ``httpx`` mock
    transport; leave ``transport`` out to reach the real server):

    >>> import json
    >>> import httpx
    >>> from agenticlens_frames.formats.model import CaseSpec
    >>> def endpoint(request):
    ...     prompt = json.loads(request.content)["messages"][0]["content"]
    ...     verdict = "correct" if "refund issued" in prompt else "wrong"
    ...     content = json.dumps({"verdict": verdict, "reason": "says it is done"})
    ...     return httpx.Response(200, json={"choices": [{"message": {"content": content}}],
    ...                                      "usage": {"prompt_tokens": 30,
    ...                                                "completion_tokens": 8}})
    >>> judge = ChatJudge(base_url="http://judge.local/v1", model="grader-1",
    ...                   prompt_template="Question: {input}\\nAnswer: {output}",
    ...                   verdicts={"correct": 1.0, "wrong": 0.0},
    ...                   transport=httpx.MockTransport(endpoint), environ={})
    >>> case = CaseSpec(id="c1", name="refund", index=0, input="Can I get a refund?")
    >>> judgement = judge("Yes, refund issued.", case, None, {})
    >>> judgement["value"], judgement["explanation"], judgement["metadata"]["verdict"]
    (1.0, 'says it is done', 'correct')
    >>> judgement["metadata"]["judge_input_tokens"], judgement["metadata"]["judge_model"]
    (30, 'grader-1')
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        prompt_template: str,
        verdicts: Mapping[str, float] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        system_prompt: str | None = None,
        provider: str | None = None,
        input_price_per_mtok: float | None = None,
        output_price_per_mtok: float | None = None,
        timeout_seconds: float = 60.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = True,
        transport: httpx.BaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InputError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not model:
            raise InputError("model must not be empty")
        fields = {name for _, name, _, _ in string.Formatter().parse(prompt_template) if name}
        if "output" not in fields:
            raise InputError("prompt_template must contain {output}", hint="and usually {input}")
        for label, value in (verdicts or {}).items():
            if not 0.0 <= float(value) <= 1.0:
                raise InputError(f"verdict {label!r} has value {value}, outside [0, 1]")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.prompt_template = prompt_template
        self.verdicts = {str(k).casefold(): float(v) for k, v in (verdicts or {}).items()}
        # The label as configured, whatever the model's spelling: samples of one output
        # agree when their verdicts match case-insensitively, as they are matched.
        self._labels = {str(k).casefold(): str(k) for k in (verdicts or {})}
        self.api_key_env = api_key_env
        self.system_prompt = system_prompt
        self.provider = provider
        self.prices = (
            (input_price_per_mtok, output_price_per_mtok)
            if input_price_per_mtok is not None and output_price_per_mtok is not None
            else None
        )
        self.timeout_seconds = float(timeout_seconds)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self._transport = transport
        self._environ = environ

    def __repr__(self) -> str:
        return (
            f"ChatJudge(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    # ----------------------------------------------------------------- the call

    def prompt(self, output: str, case: CaseSpec, config: Mapping[str, Any]) -> str:
        """The rubric prompt for one output (``config``: the case's evaluator entry).

        Examples
        --------
        >>> from agenticlens_frames.formats.model import CaseSpec
        >>> judge = ChatJudge(base_url="http://judge.local/v1", model="grader-1",
        ...                   prompt_template="Q: {input} | A: {output} | Ref: {expected} | {tone}")
        >>> case = CaseSpec(id="c1", name="refund", index=0, input="Refund?")
        >>> judge.prompt("Done.", case, {"config": {"reference": "Yes", "extra": {"tone": "kind"}}})
        'Q: Refund? | A: Done. | Ref: Yes | kind'
        >>> judge.prompt("Done.", case, {})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.judge_client.ChatJudgeError: prompt_template names {tone}, which ...
        """
        inner = config.get("config", {}) if isinstance(config, Mapping) else {}
        extra = inner.get("extra", {}) if isinstance(inner, Mapping) else {}
        expected = inner.get("reference") or case.expected_output or _NO_REFERENCE
        source = case.input
        text_input = (
            _NO_INPUT
            if source is None
            else source
            if isinstance(source, str)
            else json.dumps(source, ensure_ascii=False)
        )
        try:
            return self.prompt_template.format(
                **dict(extra), output=output, input=text_input, expected=expected
            )
        except KeyError as exc:
            raise ChatJudgeError(
                f"prompt_template names {{{exc.args[0]}}}, which case {case.id!r} does not "
                f"give: add it under its evaluator entry's config.extra"
            ) from None

    def __call__(
        self, output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Judge one output; returns a judgement mapping or raises :class:`ChatJudgeError`."""
        import httpx

        env = os.environ if self._environ is None else self._environ
        key = env.get(self.api_key_env, "")
        messages = [{"role": "user", "content": self.prompt(output, case, config)}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        started = time.perf_counter()
        deadline = started + self.timeout_seconds
        timed_out = ChatJudgeError(
            f"chat judge {self.model!r} timed out after {self.timeout_seconds:g} s"
        )
        try:
            status, data = self._post(httpx, body, headers, deadline, timed_out)
        except httpx.TimeoutException:
            raise timed_out from None
        except httpx.HTTPError as exc:
            raise ChatJudgeError(
                self._mask(f"chat judge {self.model!r} could not be reached: {exc}", key)
            ) from None
        elapsed = round((time.perf_counter() - started) * 1000, 3)
        snippet = " ".join(data.decode("utf-8", errors="replace").split())[:200]
        if status != 200:
            hint = f" ({self._status_hint(status, key)})" if status in _HINTED else ""
            raise ChatJudgeError(
                self._mask(
                    f"chat judge {self.model!r} answered HTTP {status}{hint}: {snippet}", key
                )
            )
        try:
            reply = json.loads(data)
            content = reply["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            # Quoted, so a truncated body, an error object or a web page can be told apart.
            raise ChatJudgeError(
                self._mask(
                    f"chat judge {self.model!r} sent a reply that is not a chat completion "
                    f"(no choices[0].message.content; {self._root_hint()}): {snippet!r}",
                    key,
                )
            ) from None
        usage = self._usage(reply.get("usage"), elapsed)
        value, verdict, reason = self._verdict(content, usage, key)
        metadata: dict[str, Any] = {}
        if verdict is not None:
            metadata["verdict"] = verdict
        metadata["judge_model"] = reply.get("model") or self.model
        if self.provider:
            metadata["judge_provider"] = self.provider
        metadata.update(usage)
        return {"value": value, "explanation": reason, "metadata": metadata}

    # ----------------------------------------------------------------- helpers

    def _post(
        self,
        httpx: Any,
        body: dict[str, Any],
        headers: dict[str, str],
        deadline: float,
        timed_out: ChatJudgeError,
    ) -> tuple[int, bytes]:
        """POST the completion request: the reply's status and body, read by the deadline.

        httpx's timeout bounds each read, not the call: a reply trickling in a byte at a
        time would never time out (and the retry policy would never get control), so the
        body is read in chunks against the deadline of the whole call.
        """
        url = f"{self.base_url}/chat/completions"
        with (
            httpx.Client(transport=self._transport, timeout=self.timeout_seconds) as client,
            client.stream("POST", url, json=body, headers=headers) as response,
        ):
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise ChatJudgeError(
                        f"chat judge {self.model!r} sent a reply larger than "
                        f"{MAX_REPLY_BYTES // 2**20} MiB (a chat completion is kilobytes; "
                        f"{self._root_hint()})"
                    )
                if time.perf_counter() > deadline:
                    raise timed_out
            return response.status_code, b"".join(chunks)

    def _root_hint(self) -> str:
        """What to check when the server is not a chat-completions endpoint."""
        return f"is base_url {self.base_url!r} the API root, as in http://host:port/v1?"

    def _status_hint(self, status: int, key: str) -> str:
        """What to check after an HTTP ``status`` that retrying does not mend."""
        if status in (404, 405):
            return self._root_hint()
        held = "holds a key" if key else "is empty or unset"
        return f"the key is read from ${self.api_key_env}, which {held}"

    @staticmethod
    def _mask(text: str, key: str) -> str:
        return text.replace(key, _MASK) if len(key) >= 4 else text

    def _usage(self, raw: Any, elapsed: float) -> dict[str, Any]:
        usage: dict[str, Any] = {"judge_latency_ms": elapsed}
        if not isinstance(raw, Mapping):
            return usage
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and not isinstance(prompt, bool):
            usage["judge_input_tokens"] = prompt
        if isinstance(completion, int) and not isinstance(completion, bool):
            usage["judge_output_tokens"] = completion
        if self.prices is not None and {"judge_input_tokens", "judge_output_tokens"} <= set(usage):
            cost = (
                usage["judge_input_tokens"] * self.prices[0]
                + usage["judge_output_tokens"] * self.prices[1]
            ) / 1_000_000
            usage["judge_cost_usd"] = cost
            usage["judge_cost_source"] = "estimated"
        return usage

    def _verdict(
        self, content: Any, usage: dict[str, Any], key: str = ""
    ) -> tuple[float, str | None, str]:
        """(value, verdict label or None, reason) from the model's JSON reply; ``key`` (the
        API key) is masked wherever the reply is quoted (a gateway may echo headers)."""
        preview = self._mask(str(content)[:200], key)
        data = _json_object(content) if isinstance(content, str) else None
        if not isinstance(data, Mapping):
            raise ChatJudgeError(
                f"chat judge {self.model!r} replied without a JSON object: {preview!r}", usage
            )
        reason = data.get("reason", data.get("explanation"))
        reason = self._mask("" if reason is None else str(reason), key)
        label = data.get("verdict")
        if isinstance(label, str) and self.verdicts:
            folded = label.strip().casefold()
            value = self.verdicts.get(folded)
            if value is None:
                raise ChatJudgeError(
                    self._mask(
                        f"chat judge {self.model!r} gave verdict {label!r}, not one of "
                        f"{sorted(self.verdicts)}",
                        key,
                    ),
                    usage,
                )
            return value, self._labels[folded], reason
        score = data.get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
            return float(score), None, reason
        raise ChatJudgeError(
            f"chat judge {self.model!r} replied without a usable verdict or score in [0, 1]: "
            f"{preview!r}",
            usage,
        )


def _json_object(text: str) -> Any:
    r"""The JSON object a judge replied, or None: the whole reply, else the one object it
    wraps — in a code fence, or after a sentence ("Sure! {...}") — as models often do even
    when asked for bare JSON (each such reply was a failed, billed attempt).

    Examples
    --------
    >>> _json_object('{"score": 1}'), _json_object('```json\n{"score": 1}\n```')
    ({'score': 1}, {'score': 1})
    >>> _json_object('Sure! {"verdict": "correct"} Hope it helps.'), _json_object("no")
    ({'verdict': 'correct'}, None)
    """
    for candidate in (text, text[text.find("{") : text.rfind("}") + 1]):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, Mapping):
            return data
    return None
