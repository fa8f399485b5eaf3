"""Chat templates render as transformers renders them, with bounds (issue 48, item 11): the
same text as ``apply_chat_template`` on the templates models ship, and a template that would
grow without bound (``{{ 'x' * 10**10 }}`` grew until memory ran out) refused before it grows,
naming the template and the bound, in well under a second each."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pinbench.worker.generation.chat_template import ChatTemplate, TemplateRefused

NAME = "model/tokenizer_config.json (chat_template)"

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}"
    "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
    "{% endif %}{% endfor %}"
)
ZEPHYR = (
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"
)
GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'assistant') %}"
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
)
TOOLS = (
    "{%- set ns = namespace(system='', turns=0) -%}"
    "{%- for m in messages -%}{%- if m.role == 'system' -%}{%- set ns.system = m.content -%}"
    "{%- else -%}{%- set ns.turns = ns.turns + 1 -%}{%- endif -%}{%- endfor -%}"
    "{{ ns.system | upper ~ ' [' ~ ns.turns ~ ' turns] ' }}"
    "{{ messages | map(attribute='role') | join(', ') }}|{{ messages[-1] | tojson }}|"
    "{% if tools is not none %}{{ tools | tojson(indent=2) }}{% endif %}"
    "{{ '%5d|%-4s|' % (42, 'ab') }}{{ '{:>6}'.format('cd') }}{{ 'a-b-c'.split('-') | length }}"
    "{% for m in messages if m.role != 'system' %}{% generation %}{{ loop.index }}"
    "{% endgeneration %}{% endfor %}{{ 'x' * 3 }}{{ range(3) | list }}"
    "{{ eos_token | replace('<', '[') | center(12) | indent(2) }}"
)
CONVERSATION = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "  Name a colour. "},
    {"role": "assistant", "content": "Blue"},
    {"role": "user", "content": "Another?"},
]


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "</s>": 1, "<unk>": 2}
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<unk>")),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )


@pytest.mark.parametrize(
    ("template", "conversation"),
    [
        (CHATML, CONVERSATION),
        (LLAMA2, CONVERSATION),
        (ZEPHYR, CONVERSATION),
        (GEMMA, CONVERSATION[1:]),
        (TOOLS, CONVERSATION),
        (CHATML, CONVERSATION[1:2]),
    ],
    ids=["chatml", "llama-2", "zephyr", "gemma", "namespace-tojson-format-generation", "one-turn"],
)
def test_a_template_renders_as_transformers_renders_it(
    template: str, conversation: list[dict[str, str]]
) -> None:
    tokenizer = _tokenizer()
    for prompt in (True, False):
        theirs = tokenizer.apply_chat_template(
            conversation, chat_template=template, tokenize=False, add_generation_prompt=prompt
        )
        ours = ChatTemplate(template, name=NAME, variables=tokenizer.special_tokens_map)
        assert ours.render(conversation, add_generation_prompt=prompt) == theirs


def test_a_templates_own_refusal_is_said_naming_the_template() -> None:
    """``raise_exception`` (a template refusing a conversation), as transformers raises it."""
    chat = ChatTemplate(GEMMA, name=NAME, variables={"bos_token": "<s>"})
    with pytest.raises(TemplateRefused) as refused:
        chat.render(CONVERSATION, add_generation_prompt=True)
    assert str(refused.value) == f"chat template {NAME}: failed: System role not supported"


# (why, template, what the refusal says)
BOMBS = [
    ("the issue's template", "{{ 'x' * 10**10 }}", "`*` would make 10000000000 characters"),
    ("a list repeated", "{{ ['x'] * 10**9 }}", "`*` would make 1000000000"),
    (
        "doubling with ~",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "join would make 8388608",
    ),
    (
        "doubling with +",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
        "{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "`+` would make 8388608",
    ),
    ("a padding method", "{{ 'x'.ljust(10**9) }}", "str.ljust would make 1000000000"),
    ("a padding filter", "{{ 'x'|center(10**9) }}", "center would make 1000000000"),
    ("an indent of every line", "{{ ('\\n' * 1000)|indent(100000) }}", "indent would make"),
    ("a replace that multiplies", "{{ ('x' * 3000).replace('', 'y' * 3000) }}", "replace would"),
    ("a printf width", "{{ '%999999999d' % 1 }}", "width of 999999999"),
    ("a format width", "{{ '{:999999999}'.format(1) }}", "width of 999999999"),
    ("a format width from an argument", "{{ '{:{w}}'.format(1, w=10**9) }}", "nested field"),
    ("a range", "{{ range(10**9)|list }}", "range() of 1000000000 items"),
    ("a huge integer", "{{ 2 ** 10000000 }}", "more than 64 bits"),
    (
        "loops inside loops",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "more than 1000000 steps",
    ),
    (
        "output in a loop",
        "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        "its output passes 4194304 characters",
    ),
    (
        "a block that collects",
        "{% set b %}{% for i in range(100000) %}{{ 'y' * 100000 }}"
        "{% endfor %}{% endset %}{{ b|length }}",
        "in all",
    ),
    ("a million references printed", "{{ ['y' * 1000000] * 4000000 }}", "turning a value into"),
    (
        "a million references joined",
        "{% set xs = ['y' * 1000] * 100000 %}{{ xs|join }}",
        "join would make",
    ),
    (
        "many distinct values kept",
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
        "{% set ns.l = ns.l + ['x' * 1000000] %}{% endfor %}",
        "in all",
    ),
    ("a sum of lists", "{{ ([[0] * 4000000] * 4000000)|sum(start=[]) }}", "sum would make"),
    (
        "a comparison of lists walking one list per reference (quadratic)",
        "{% set a = ['x'] * 3000 %}{% set b = a|list %}{{ [b] * 3000 == [a] * 3000 }}",
        "`==` goes over",
    ),
    (
        "an `in` that walks a list of references",
        "{% set a = ['x' * 1000] * 5000 %}{{ 'y' in a }}",
        "`in` goes over",
    ),
    (
        "a chained comparison, its second pair the large one",
        "{% set a = ['x'] * 3000 %}{{ 1 < 2 != [a] * 3000 }}",
        "`!=` goes over",
    ),
    *(
        (
            f"{f} lowering a long string per reference",
            f"{{% set s = 'x' * 2000 %}}{{{{ ([s] * 4000)|{f} }}}}",
            f"{f.split('(')[0]} goes over",
        )
        for f in ("max", "min", "sort", "unique", "groupby(0)")
    ),
    (
        "max over a generator",
        "{% set s = 'x' * 2000 %}{{ ([s] * 4000)|map('lower')|max }}",
        "max goes over",
    ),
    (
        "dictsort over long keys",
        "{% set d = dict.fromkeys(range(3000)|map('string')|map('center', 2000)) %}"
        "{{ d|dictsort }}",
        "dictsort goes over",
    ),
    (
        "tojson of a million references, sized before json.dumps",
        "{% set s = 'x' * 2000 %}{{ ([s] * 4000)|tojson }}",
        "tojson would make",
    ),
    (
        "tojson's indent at every depth",
        "{% set ns = namespace(x=1) %}{% for i in range(3000) %}{% set ns.x = [ns.x] %}"
        "{% endfor %}{{ ns.x|tojson(indent=64)|length }}",
        "tojson would make",
    ),
    ("recursion", "{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}", "recursed too deeply"),
    ("a filter left out", "{{ 'x'|wordwrap(1) }}", "does not compile: No filter named 'wordwrap'"),
    ("a global left out", "{{ lipsum(10**6) }}", "'lipsum' is undefined"),
    ("a method left out", "{{ 'x\\t'.expandtabs(10**9) }}", "str.expandtabs is not available"),
    ("the sandbox", "{{ ''.__class__.__mro__[1].__subclasses__() }}", "failed"),
]


@pytest.mark.parametrize(("why", "template", "says"), BOMBS, ids=[b[0] for b in BOMBS])
def test_a_template_that_would_grow_without_bound_is_refused_naming_it(
    why: str, template: str, says: str
) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateRefused) as refused:
        ChatTemplate(template, name=NAME, variables={}).render_here(
            [{"role": "user", "content": "hi"}], add_generation_prompt=True
        )
    assert str(refused.value).startswith(f"chat template {NAME}: ")
    assert says in str(refused.value), str(refused.value)
    assert time.monotonic() - started < 10


def test_comparisons_and_ordering_filters_keep_their_meaning() -> None:
    """Routed through the bounds, comparisons chain as Python's do and the ordering filters
    and ``tojson`` give what Jinja's give."""
    template = (
        "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' in 'cab' }} {{ 'x' not in ['x'] }} "
        "{{ messages[0]['role'] == 'user' }} {{ 'role' in messages[0] }} "
        "{{ (['b', 'a'] * 3)|sort|unique|list }} {{ ['B', 'a']|max }} "
        "{{ {'b': 1, 'a': 2}|dictsort }} "
        "{{ {'a': [1, 'x\"y', none, true]}|tojson }}"
    )
    text = ChatTemplate(template, name=NAME, variables={}).render(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True
    )
    assert text == (
        "True False True False True True ['a', 'b'] B [('a', 2), ('b', 1)] "
        '{"a": [1, "x\\"y", null, true]}'
    )


def _rendered(template: str) -> str:
    return ChatTemplate(template, name=NAME, variables={}).render(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True
    )


def test_a_render_runs_in_a_process_of_its_own_under_its_rules_and_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``render`` is the rules (``render_here``) in a child process, and the child's limits
    catch what the rules miss: an address space past ``MAX_MEMORY`` is a MemoryError (lists
    within every rule, made here smaller than the limit allows), a render past its CPU
    seconds is killed (a limit of 0 s: the next whole second of CPU)."""
    from pinbench.worker.generation import template_worker

    with pytest.raises(TemplateRefused, match="`==` goes over"):
        _rendered("{% set a = ['x'] * 3000 %}{% set b = a|list %}{{ [b] * 3000 == [a] * 3000 }}")
    grows = "{% set a = [0] * 4000000 %}{% set b = a|list %}{% set c = a|list %}{{ 'ok' }}"
    assert _rendered(grows) == "ok"  # 96 MB: within the rules and the limit
    monkeypatch.setattr(template_worker, "MAX_MEMORY", 48 * 1024**2)
    with pytest.raises(TemplateRefused) as refused:
        _rendered(grows)
    assert str(refused.value) == f"chat template {NAME}: ran out of memory"
    monkeypatch.setattr(template_worker, "MAX_CPU_SECONDS", 0)
    with pytest.raises(TemplateRefused) as refused:
        _rendered(  # 4 million filter calls, each within the rules: seconds of CPU at least
            "{% set xs = (range(100000)|list) * 40 %}"
            "{{ xs|map('string')|map('center', 3)|map('length')|sum }}"
        )
    assert str(refused.value) == f"chat template {NAME}: killed past its CPU limit (0 s) or memory"
