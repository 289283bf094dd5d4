#!/usr/bin/env python3
"""Render chat templates with Python's Jinja2 in Hugging Face's environment.

Each template (a *.jinja file) is rendered over every conversation of a conversations
file, and the prompts (or the message of the error a template raises) are written as
one JSON file per template: {"conversation name": {"prompt": ...} or {"error": ...}}.

The environment is the one transformers' apply_chat_template builds: a sandboxed
environment with trim_blocks and lstrip_blocks on, the loop-controls extension and the
{% generation %} tag;
tojson is json.dumps with ensure_ascii off (indent, separators and sort_keys passed
through); raise_exception raises the template's message; strftime_now formats a fixed
instant (the conversations file's "now") so the goldens do not change with the day.

Uses only Debian's python3-jinja2 (no other package). Usage:

  scripts/template-goldens.py                      # regenerate the committed goldens
                                                   # (family templates and feature templates)
  scripts/template-goldens.py --templates DIR --out DIR2
"""

import argparse
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "engine", "chattemplate", "testdata")
# The family templates are embedded in the binary (engine/chattemplate/builtin.go).
TEMPLATES = os.path.join(HERE, "..", "engine", "chattemplate", "templates")


class TemplateRaised(Exception):
    """The error of a template's own raise_exception."""


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}, which transformers' environment accepts
    (it marks the assistant's tokens for training masks): renders its body as it is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment(now):
    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def variables(inputs):
    """The variables apply_chat_template hands a template: messages, tools and
    documents (None when absent), add_generation_prompt, the special tokens, and the
    caller's keyword arguments (only those given)."""
    v = {
        "messages": inputs["messages"],
        "tools": inputs.get("tools"),
        "documents": inputs.get("documents"),
        "add_generation_prompt": inputs.get("add_generation_prompt", False),
        "bos_token": inputs.get("bos_token", ""),
        "eos_token": inputs.get("eos_token", ""),
    }
    for key in ("enable_thinking", "reasoning_effort", "builtin_tools"):
        if key in inputs:
            v[key] = inputs[key]
    v.update(inputs.get("extra", {}))
    return v


def render_all(template_text, conversations, env):
    out = {}
    template = env.from_string(template_text)
    for conv in conversations:
        try:
            out[conv["name"]] = {"prompt": template.render(**variables(conv["inputs"]))}
        except TemplateRaised as e:
            out[conv["name"]] = {"error": str(e)}
        except Exception as e:  # noqa: BLE001 - any fault of the template is recorded
            # A fault of the template itself (an undefined attribute called, tojson of an
            # undefined value): the Go side must fail too, in its own words.
            out[conv["name"]] = {"failure": "%s: %s" % (type(e).__name__, e)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--templates", help="directory of *.jinja templates")
    ap.add_argument("--conversations", default=os.path.join(TESTDATA, "conversations.json"))
    ap.add_argument("--out", help="directory the NAME.json goldens are written to")
    args = ap.parse_args()
    if (args.templates is None) != (args.out is None):
        sys.exit("--templates and --out go together")
    if args.templates is None:
        for templates, out in ((TEMPLATES, "goldens"), (os.path.join(TESTDATA, "features"), "goldens-features")):
            generate(templates, args.conversations, os.path.join(TESTDATA, out))
    else:
        generate(args.templates, args.conversations, args.out)


def generate(templates, conversations, out_dir):
    class args:
        pass
    args.templates, args.conversations, args.out = templates, conversations, out_dir

    with open(args.conversations, encoding="utf-8") as f:
        spec = json.load(f)
    now = datetime.datetime.fromisoformat(spec["now"])
    env = environment(now)
    os.makedirs(args.out, exist_ok=True)
    names = sorted(n for n in os.listdir(args.templates) if n.endswith(".jinja"))
    if not names:
        sys.exit("no *.jinja templates in " + args.templates)
    for name in names:
        with open(os.path.join(args.templates, name), encoding="utf-8") as f:
            text = f.read()
        try:
            goldens = render_all(text, spec["conversations"], env)
        except jinja2.TemplateError as e:
            goldens = {"__template__": {"error": "%s: %s" % (type(e).__name__, e)}}
        path = os.path.join(args.out, name[:-len(".jinja")] + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(goldens, f, ensure_ascii=False, indent=1, sort_keys=True)
            f.write("\n")
        raised = sum(1 for g in goldens.values() if "error" in g)
        failed = sum(1 for g in goldens.values() if "failure" in g)
        print("%-24s %d conversations, %d raised, %d failed" % (name, len(goldens), raised, failed))


if __name__ == "__main__":
    main()
