"""Engine adapters against recorded responses served over real HTTP (an aiohttp test server)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from rigbench.client import ChatClient, Deadlines
from rigbench.errors import EndpointError, UsageError
from rigbench.rig.engines import (
    ENGINE_NAMES,
    LlamaCppAdapter,
    OllamaAdapter,
    SGLangAdapter,
    VLLMAdapter,
    canonical_values,
    detect_engine,
    get_adapter,
    parse_prometheus,
)

FIX = Path(__file__).parents[1] / "fixtures" / "engines"


def _json(engine: str, name: str) -> Any:
    return json.loads((FIX / engine / name).read_text())


def _text(engine: str, name: str) -> str:
    return (FIX / engine / name).read_text()


# path -> (status, body); body is a dict/list (JSON) or str (text). POST bodies are recorded.
Routes = dict[tuple[str, str], tuple[int, Any]]


def _routes(engine: str) -> Routes:
    if engine == "llamacpp":
        return {
            ("GET", "/health"): (200, _json("llamacpp", "health.json")),
            ("GET", "/props"): (200, _json("llamacpp", "props.json")),
            ("GET", "/v1/models"): (200, _json("llamacpp", "v1_models.json")),
            ("GET", "/metrics"): (200, _text("llamacpp", "metrics.txt")),
            ("POST", "/tokenize"): (200, _json("llamacpp", "tokenize.json")),
            ("POST", "/detokenize"): (200, _json("llamacpp", "detokenize.json")),
            ("POST", "/apply-template"): (200, _json("llamacpp", "apply_template.json")),
        }
    if engine == "vllm":
        return {
            ("GET", "/health"): (200, ""),
            ("GET", "/version"): (200, _json("vllm", "version.json")),
            ("GET", "/v1/models"): (200, _json("vllm", "v1_models.json")),
            ("GET", "/metrics"): (200, _text("vllm", "metrics.txt")),
            ("POST", "/tokenize"): (200, _json("vllm", "tokenize_prompt.json")),
            ("POST", "/detokenize"): (200, _json("vllm", "detokenize.json")),
        }
    if engine == "sglang":
        return {
            ("GET", "/health"): (200, ""),
            ("GET", "/server_info"): (200, _json("sglang", "server_info.json")),
            ("GET", "/model_info"): (200, _json("sglang", "model_info.json")),
            ("GET", "/metrics"): (200, _text("sglang", "metrics.txt")),
            ("POST", "/v1/tokenize"): (200, _json("sglang", "tokenize.json")),
            ("POST", "/v1/detokenize"): (200, _json("sglang", "detokenize.json")),
        }
    if engine == "ollama":
        return {
            ("GET", "/"): (200, "Ollama is running"),
            ("GET", "/api/version"): (200, _json("ollama", "version.json")),
            ("GET", "/api/ps"): (200, _json("ollama", "ps.json")),
            ("POST", "/api/show"): (200, _json("ollama", "show.json")),
            ("GET", "/v1/models"): (200, _json("ollama", "v1_models.json")),
        }
    raise AssertionError(engine)


class FakeEngine:
    """Serves a route table; unknown paths are 404 with a JSON error, like the real servers."""

    def __init__(self, routes: Routes) -> None:
        self.routes = routes
        self.received: list[tuple[str, str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.received.append((request.method, request.path, body))
        hit = self.routes.get((request.method, request.path))
        if hit is None:
            return web.json_response({"error": {"message": "Not Found", "code": 404}}, status=404)
        status, payload = hit
        if isinstance(payload, str):
            return web.Response(status=status, text=payload)
        return web.json_response(payload, status=status)

    def bodies(self, method: str, path: str) -> list[Any]:
        return [b for m, p, b in self.received if m == method and p == path]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Routes], Any]]:
    started: list[tuple[TestServer, ChatClient]] = []

    async def _start(routes: Routes) -> tuple[FakeEngine, ChatClient]:
        fake = FakeEngine(routes)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", fake.handle)
        server = TestServer(app)
        await server.start_server()
        client = ChatClient(f"http://127.0.0.1:{server.port}/v1")
        started.append((server, client))
        return fake, client

    yield _start
    for server, client in started:
        await client.aclose()
        await server.close()


# -- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["llamacpp", "vllm", "sglang", "ollama"])
async def test_detect_engine_names_each_engine_from_its_own_endpoints(serve: Any, engine: str) -> None:
    _, client = await serve(_routes(engine))
    assert await detect_engine(client) == engine


async def test_detect_sglang_through_the_deprecated_get_server_info(serve: Any) -> None:
    routes = _routes("sglang")
    routes[("GET", "/get_server_info")] = routes.pop(("GET", "/server_info"))
    _, client = await serve(routes)
    assert await detect_engine(client) == "sglang"


async def test_detect_vllm_by_metrics_when_models_do_not_say_vllm(serve: Any) -> None:
    routes = _routes("vllm")
    routes[("GET", "/v1/models")] = (200, {"object": "list", "data": [{"id": "m", "owned_by": "someone"}]})
    _, client = await serve(routes)
    assert await detect_engine(client) == "vllm"


async def test_a_plain_openai_server_is_unknown_not_guessed(serve: Any) -> None:
    _, client = await serve({("GET", "/v1/models"): (200, {"object": "list", "data": [{"id": "m"}]}),
                             ("GET", "/version"): (200, {"version": "1.0"})})
    assert await detect_engine(client) == "unknown"


async def test_detect_on_a_dead_port_raises_with_the_url() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", deadlines=Deadlines(connect_s=1.0))
    try:
        with pytest.raises(EndpointError, match=r"cannot reach http://127\.0\.0\.1:9"):
            await detect_engine(client)
    finally:
        await client.aclose()


# -- server info --------------------------------------------------------------------------------


async def test_llamacpp_server_info_reads_props(serve: Any) -> None:
    _, client = await serve(_routes("llamacpp"))
    info = await LlamaCppAdapter().server_info(client)
    assert info["version"] == "b0-unknown"
    assert info["context_length"] == 1024 and info["slots"] == 2
    assert info["chat_template"].startswith("{% for message in messages %}")


async def test_vllm_server_info_has_version_model_and_context(serve: Any) -> None:
    _, client = await serve(_routes("vllm"))
    info = await VLLMAdapter().server_info(client)
    assert (info["version"], info["model"], info["context_length"]) == ("0.11.0", "muse-glimmer", 131072)
    assert "server_info" not in info["raw"]  # dev-mode endpoint absent: not invented


async def test_sglang_server_info_keeps_speculative_settings(serve: Any) -> None:
    _, client = await serve(_routes("sglang"))
    info = await SGLangAdapter().server_info(client)
    assert info["version"] == "0.5.1"
    assert info["model"] == "muse-glimmer" and info["slots"] == 48
    assert info["context_length"] == 131066  # context_length unset: the scheduler's input limit
    assert info["speculative_algorithm"] == "EAGLE3" and info["avg_spec_accept_length"] == 2.61
    assert info["raw"]["server_info"]["speculative_num_draft_tokens"] == 4


async def test_sglang_server_info_without_any_info_endpoint_says_what_was_tried(serve: Any) -> None:
    _, client = await serve({("GET", "/health"): (200, "")})
    with pytest.raises(EndpointError, match="/get_server_info"):
        await SGLangAdapter().server_info(client)


async def test_ollama_server_info_and_show(serve: Any) -> None:
    fake, client = await serve(_routes("ollama"))
    adapter = OllamaAdapter()
    info = await adapter.server_info(client)
    assert (info["version"], info["model"], info["context_length"]) == ("0.33.0", "qwen3:8b", 4096)
    shown = await adapter.show(client, "qwen3:8b")
    assert "thinking" in shown["capabilities"]
    assert fake.bodies("POST", "/api/show") == [{"model": "qwen3:8b"}]


async def test_vllm_version_404_is_an_endpoint_error_naming_the_url(serve: Any) -> None:
    _, client = await serve({})
    with pytest.raises(EndpointError, match=r"/version returned HTTP 404"):
        await VLLMAdapter().server_info(client)


# -- tokenize -----------------------------------------------------------------------------------


async def test_llamacpp_tokenize_sends_content_without_special_tokens(serve: Any) -> None:
    fake, client = await serve(_routes("llamacpp"))
    adapter = LlamaCppAdapter()
    assert await adapter.tokenize(client, "Hello world") == [19556, 905]
    assert fake.bodies("POST", "/tokenize") == [{"content": "Hello world", "add_special": False}]
    assert await adapter.detokenize(client, [19556, 905]) == "Hello world"


async def test_llamacpp_chat_count_renders_then_tokenizes_like_the_chat_path(serve: Any) -> None:
    fake, client = await serve(_routes("llamacpp"))
    messages = [{"role": "user", "content": "Hi"}]
    n = await LlamaCppAdapter().count_chat_tokens(client, "m", messages)
    assert n == 2  # the recorded /tokenize reply
    assert fake.bodies("POST", "/apply-template") == [{"messages": messages}]
    rendered = _json("llamacpp", "apply_template.json")["prompt"]
    expected = {"content": rendered, "add_special": True, "parse_special": True}
    assert fake.bodies("POST", "/tokenize") == [expected]


async def test_vllm_tokenize_prompt_and_messages_forms(serve: Any) -> None:
    routes = _routes("vllm")
    fake, client = await serve(routes)
    adapter = VLLMAdapter()
    assert await adapter.tokenize(client, "Hello world, how") == [9906, 1917, 11, 1268]
    assert fake.bodies("POST", "/tokenize")[-1] == {"prompt": "Hello world, how", "add_special_tokens": False}
    routes[("POST", "/tokenize")] = (200, _json("vllm", "tokenize_messages.json"))
    messages = [{"role": "user", "content": "Hello world, how"}]
    assert await adapter.count_chat_tokens(client, "muse-glimmer", messages) == 17
    assert fake.bodies("POST", "/tokenize")[-1] == {"model": "muse-glimmer", "messages": messages,
                                                    "add_generation_prompt": True}
    assert await adapter.detokenize(client, [9906]) == "Hello world, how"


async def test_sglang_tokenize_uses_v1_paths_and_has_no_chat_count(serve: Any) -> None:
    fake, client = await serve(_routes("sglang"))
    adapter = SGLangAdapter()
    assert await adapter.tokenize(client, "Hello world, how") == [9906, 1917, 11, 1268]
    sent = fake.bodies("POST", "/v1/tokenize")
    assert sent == [{"prompt": "Hello world, how", "add_special_tokens": False}]
    assert await adapter.detokenize(client, [1]) == "Hello world, how"
    assert await adapter.count_chat_tokens(client, "m", [{"role": "user", "content": "x"}]) is None


async def test_ollama_has_no_tokenizer_and_sends_nothing(serve: Any) -> None:
    fake, client = await serve(_routes("ollama"))
    adapter = OllamaAdapter()
    assert await adapter.tokenize(client, "x") is None
    assert await adapter.detokenize(client, [1]) is None
    assert await adapter.count_chat_tokens(client, "m", []) is None
    assert fake.received == []


async def test_tokenize_error_reply_is_an_endpoint_error(serve: Any) -> None:
    _, client = await serve({("POST", "/tokenize"): (400, {"error": {"message": "bad"}})})
    with pytest.raises(EndpointError, match="HTTP 400"):
        await VLLMAdapter().tokenize(client, "x")


# -- metrics ------------------------------------------------------------------------------------


def test_vllm_metrics_map_to_canonical_names() -> None:
    values = canonical_values(VLLMAdapter(), _text("vllm", "metrics.txt"))
    assert values == {
        "kv_cache_usage_ratio": 0.002, "requests_running": 3.0, "requests_waiting": 1.0,
        "prompt_tokens_total": 24576.0, "generation_tokens_total": 1280.0,
        "spec_drafts_total": 376.0, "spec_draft_tokens_total": 5640.0, "spec_accepted_tokens_total": 904.0,
        "prefix_cache_queries_total": 6400.0, "prefix_cache_hits_total": 1600.0,
    }


def test_vllm_legacy_kv_gauge_is_read_through_the_fallback() -> None:
    values = canonical_values(VLLMAdapter(), _text("vllm", "metrics_legacy.txt"))
    assert values["kv_cache_usage_ratio"] == 0.25
    assert (values["prefix_cache_queries_total"], values["prefix_cache_hits_total"]) == (512.0, 128.0)


def test_sglang_metrics_map_including_spec_means() -> None:
    values = canonical_values(SGLangAdapter(), _text("sglang", "metrics.txt"))
    assert values["kv_cache_usage_ratio"] == 0.28
    assert values["requests_running"] == 8.0 and values["requests_waiting"] == 2.0
    assert values["generation_tokens_total"] == 7.557572e06
    assert values["spec_accept_length"] == 2.61 and values["spec_accept_rate"] == 0.54
    assert "spec_accepted_tokens_total" not in values  # SGLang has no such counter


def test_llamacpp_live_metrics_map_and_every_mapped_name_exists() -> None:
    text = _text("llamacpp", "metrics.txt")
    adapter = LlamaCppAdapter()
    assert set(adapter.metric_names.values()) <= set(parse_prometheus(text))
    values = canonical_values(adapter, text)
    assert values["generation_tokens_total"] == 28.0 and values["requests_running"] == 0.0
    assert "kv_cache_usage_ratio" not in values  # this build does not export it


def test_every_mapped_vllm_and_sglang_name_is_in_its_recorded_scrape() -> None:
    for adapter, engine in ((VLLMAdapter(), "vllm"), (SGLangAdapter(), "sglang")):
        assert set(adapter.metric_names.values()) <= set(parse_prometheus(_text(engine, "metrics.txt")))


def test_counters_are_summed_over_labels_and_ratios_are_not() -> None:
    text = ('vllm:generation_tokens_total{engine="0"} 10\nvllm:generation_tokens_total{engine="1"} 5\n'
            'vllm:kv_cache_usage_perc{engine="0"} 0.5\nvllm:kv_cache_usage_perc{engine="1"} 0.25\n')
    values = canonical_values(VLLMAdapter(), text)
    assert values["generation_tokens_total"] == 15.0 and values["kv_cache_usage_ratio"] == 0.5


def test_parse_prometheus_keeps_labels_with_quotes_and_braces() -> None:
    samples = parse_prometheus('m{a="x}y",b="q\\"z"} 2.5 1700000000\n# c\nbad line\n')
    assert samples["m"][0].labels == {"a": "x}y", "b": 'q\\"z'} and samples["m"][0].value == 2.5


# -- request knobs ------------------------------------------------------------------------------


def test_forced_length_fields_per_engine() -> None:
    exact = {"max_tokens": 64, "min_tokens": 64, "ignore_eos": True}
    assert VLLMAdapter().forced_length_fields(64) == exact
    assert SGLangAdapter().forced_length_fields(64) == exact
    assert LlamaCppAdapter().forced_length_fields(64) == {"max_tokens": 64, "ignore_eos": True}
    ollama = OllamaAdapter()
    assert ollama.forced_length_fields(64) == {"max_tokens": 64}
    assert ollama.forced_length_exact is False
    assert all(get_adapter(n).forced_length_exact for n in ("llamacpp", "vllm", "sglang"))


def test_reasoning_fields() -> None:
    for name in ENGINE_NAMES:
        assert get_adapter(name).reasoning_fields(None) == {}
    vllm = VLLMAdapter().reasoning_fields("none")
    assert vllm == {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}
    high = SGLangAdapter().reasoning_fields("high")
    assert high["reasoning_effort"] == "high" and high["chat_template_kwargs"]["reasoning_effort"] == "high"
    assert LlamaCppAdapter().reasoning_fields("none") == {"reasoning_effort": "none"}
    assert OllamaAdapter().reasoning_fields("low") == {"reasoning_effort": "low"}


def test_get_adapter_names_and_aliases() -> None:
    assert [get_adapter(n).name for n in ENGINE_NAMES] == list(ENGINE_NAMES)
    assert get_adapter("llama.cpp").name == "llamacpp"
    assert get_adapter("vLLM").name == "vllm"
    with pytest.raises(UsageError, match="unknown engine 'tgi'"):
        get_adapter("tgi")


def test_adapters_do_not_share_metric_dicts() -> None:
    a, b = VLLMAdapter(), VLLMAdapter()
    a.metric_names["x"] = "y"
    assert "x" not in b.metric_names

