"""`read_messages`: good lines yielded, each bad line reported with its number, the rest kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred.errors import InputError
from maitred.messages import parse_message, read_messages
from maitred.records import Message


def _write(tmp_path: Path, lines: list[str], name: str = "msgs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line(**fields: object) -> str:
    return json.dumps(fields)


GOOD_A = _line(id="a", text="connect my domain", account="acc-1", conversation="c1", ts=1700000000)
GOOD_B = _line(text="cancel my plan", account=42)

#: (bad line, text its error must contain)
BAD_LINES: dict[str, tuple[str, str]] = {
    "invalid JSON": ('{"text": "hi", "account": ', "not valid JSON"),
    "not an object": ('["hi", "acc-1"]', "expected a JSON object, got list"),
    "a string": ('"just text"', "expected a JSON object, got str"),
    "missing text": (_line(account="acc-1"), "field 'text'"),
    "empty text": (_line(text="", account="acc-1"), "field 'text'"),
    "blank text": (_line(text="   \t", account="acc-1"), "field 'text'"),
    "text not a string": (_line(text=["hi"], account="acc-1"), "field 'text'"),
    "missing account": (_line(text="hi"), "field 'account'"),
    "empty account": (_line(text="hi", account=""), "field 'account'"),
    "boolean account": (_line(text="hi", account=True), "field 'account'"),
    "ts a string": (_line(text="hi", account="a", ts="2026-01-01"), "field 'ts'"),
    "ts a boolean": (_line(text="hi", account="a", ts=True), "field 'ts'"),
    "ts NaN": ('{"text": "hi", "account": "a", "ts": NaN}', "field 'ts'"),
    "ts Infinity": ('{"text": "hi", "account": "a", "ts": Infinity}', "field 'ts'"),
    "ts overflows": ('{"text": "hi", "account": "a", "ts": 1e400}', "field 'ts'"),
    "ts huge int": ('{"text": "hi", "account": "a", "ts": 1' + "0" * 400 + "}", "field 'ts'"),
    "5000-digit number": ('{"text": "hi", "account": "a", "n": 1' + "0" * 5000 + "}", "JSON"),
    "nested too deep": ("[" * 100_000, "JSON"),
    "lone surrogate": ('{"text": "hi \\ud800", "account": "a"}', "field 'text'"),
}


def test_good_lines_become_messages(tmp_path: Path):
    path = _write(tmp_path, [GOOD_A, GOOD_B])
    assert list(read_messages(path)) == [
        Message(id="a", text="connect my domain", account="acc-1", conversation="c1", ts=1.7e9),
        Message(id="msgs:2", text="cancel my plan", account="42", conversation="", ts=None),
    ]


def test_blank_lines_are_skipped_but_counted(tmp_path: Path):
    path = _write(tmp_path, ["", GOOD_A, "   ", "\t", GOOD_B, ""])
    messages = list(read_messages(path))
    assert [m.text for m in messages] == ["connect my domain", "cancel my plan"]
    assert messages[1].id == "msgs:5"  # the default id carries the physical line number


def test_falsy_ids_and_conversations_are_kept(tmp_path: Path):
    path = _write(tmp_path, [_line(id=0, text="hi", account="a", conversation=0)])
    (message,) = read_messages(path)
    assert message.id == "0"
    assert message.conversation == "0"


def test_a_byte_order_mark_does_not_cost_the_first_line(tmp_path: Path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + f"{GOOD_A}\n{GOOD_B}\n".encode())
    errors: list[InputError] = []
    assert [m.id for m in read_messages(path, on_error=errors.append)] == ["a", "bom:2"]
    assert errors == []


def test_bytes_that_are_not_utf8_do_not_stop_the_file(tmp_path: Path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"text": "caf\xe9 domain", "account": "a"}\n' + GOOD_B.encode() + b"\n")
    messages = list(read_messages(path))
    assert len(messages) == 2
    assert messages[0].text.startswith("caf")


@pytest.mark.parametrize(("raw", "expected"), BAD_LINES.values(), ids=BAD_LINES.keys())
def test_each_bad_line_is_reported_with_its_line_and_the_rest_kept(
    tmp_path: Path, raw: str, expected: str
):
    path = _write(tmp_path, [GOOD_A, "", raw, GOOD_B])
    errors: list[InputError] = []
    messages = list(read_messages(path, on_error=errors.append))
    assert [m.text for m in messages] == ["connect my domain", "cancel my plan"]
    assert len(errors) == 1
    err = errors[0]
    assert isinstance(err, InputError)
    assert (err.path, err.line) == (str(path), 3)
    assert str(err).startswith(f"{path}:3: ")
    assert expected in str(err)


def test_every_bad_line_of_a_file_is_reported_in_order(tmp_path: Path):
    bad = [raw for raw, _ in BAD_LINES.values()]
    lines: list[str] = []
    for raw in bad:
        lines += [GOOD_B, raw]  # no id: each good line gets its own (<stem>:<line>)
    path = _write(tmp_path, lines)
    errors: list[InputError] = []
    messages = list(read_messages(path, on_error=errors.append))
    assert len(messages) == len(bad)
    assert [e.line for e in errors] == [2 * i for i in range(1, len(bad) + 1)]


def test_without_on_error_the_first_bad_line_raises_naming_file_and_line(tmp_path: Path):
    path = _write(tmp_path, [GOOD_A, "", "{oops", _line(text="", account="a"), GOOD_B])
    stream = read_messages(path)
    assert next(stream).id == "a"  # lines before the bad one are still yielded
    with pytest.raises(InputError, match=r"msgs\.jsonl:3: not valid JSON") as raised:
        next(stream)
    assert raised.value.path == str(path)
    assert raised.value.line == 3
    with pytest.raises(InputError, match=":3:"):
        list(read_messages(path))


def test_parse_message_uses_the_given_path_and_line():
    with pytest.raises(InputError) as raised:
        parse_message("[]", "where/it.jsonl", 17)
    assert str(raised.value).startswith("where/it.jsonl:17: ")
    message = parse_message(_line(text="hi", account="a", ts=1.5), "where/it.jsonl", 17)
    assert message.id == "it:17"
    assert message.ts == 1.5


def test_a_message_that_is_not_valid_unicode_is_kept_with_replacement_characters() -> None:
    from maitred.records import Message

    assert Message("a", "caf\udce9 ok", "acc").text == "caf\ufffd ok"
    assert "\ud800" not in Message("b", "x\ud800y", "acc").text
    Message("c", "x\ud800y", "acc").text.encode("utf-8")  # any tokenizer or log can hold it
