from maitred.recall.fields import (
    flatten_params,
    skill_fields,
    split_identifier,
    strip_markdown,
    truncate,
)
from maitred.skills.model import Skill


def test_split_identifier_handles_snake_kebab_and_camel() -> None:
    assert split_identifier("get_weather") == "get weather"
    assert split_identifier("get-weather") == "get weather"
    assert split_identifier("getWeatherForecast") == "get Weather Forecast"
    assert split_identifier("PDFMerger") == "PDF Merger"


def test_strip_markdown_keeps_words_drops_markup() -> None:
    text = "# Title\n\n- **bold** item\n- [a link](http://x.y)\n\n```bash\nrun me\n```\n> quote"
    assert strip_markdown(text) == "Title bold item a link run me quote"


def test_truncate_cuts_at_a_word_boundary() -> None:
    assert truncate("alpha beta gamma", 12) == "alpha beta"
    assert truncate("short", 12) == "short"


def test_flatten_params_walks_nested_properties_and_enums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "cityName": {"type": "string", "description": "the city"},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "options": {
                "type": "array",
                "items": {"type": "object", "properties": {"max_days": {"type": "integer"}}},
            },
        },
    }
    assert flatten_params(schema) == "city Name: the city units metric imperial options max days"
    assert flatten_params(None) == ""


def test_skill_fields_gives_every_field() -> None:
    fields = skill_fields(Skill(name="pdfMerge", description=" Merge PDFs ", body="## Use\nnow"))
    assert fields == {
        "name": "pdf Merge",
        "description": "Merge PDFs",
        "body": "Use now",
        "params": "",
    }
