#!/usr/bin/env python3
"""Man pages and bash completion for gpumemrec, generated from its --help texts.

  gen_cli_docs.py --gpumemrec BIN --out DIR [--version V]

Writes DIR/man1/gpumemrec.1.gz, DIR/man1/gpumemrec-<sub>.1.gz (one per
subcommand) and DIR/completion/gpumemrec (bash). Run at build time (CMake
target gpumemrec_cli_docs) so the pages can never drift from the options.
The --help texts are CLI11's: a description line, "Usage: ...", then
"Positionals:" / "Options:" / "Subcommands:" sections of "  NAME  TEXT"
entries (a long NAME puts TEXT on the next line), then a free-text footer.
help2man (Debian package) would do the man pages for one program but not
per subcommand, nor the completion; this script is python3 standard library.
"""
import argparse
import gzip
import os
import re
import subprocess

SECTION = re.compile(r"^(Positionals|Options|Subcommands):$")
ENTRY = re.compile(r"^  (\S.*?)(?:\s{2,}(\S.*))?$")


def help_text(binary, args):
    p = subprocess.run([binary] + args + ["--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    return p.stdout.decode("utf-8")


def parse(text):
    """Returns (description, usage, {section: [(name, text)]}, footer lines)."""
    lines = text.rstrip("\n").split("\n")
    desc = re.sub(r"^gpumemrec: ", "", lines[0])
    usage = next((l[len("Usage: "):] for l in lines if l.startswith("Usage: ")), "")
    sections, footer, cur = {}, [], None
    i = lines.index("Usage: " + usage) + 1 if usage else 1
    for line in lines[i:]:
        m = SECTION.match(line)
        if m:
            cur = sections.setdefault(m.group(1), [])
        elif cur is not None and re.match(r"^  \S", line):
            e = ENTRY.match(line)
            cur.append([e.group(1).strip(), (e.group(2) or "").strip()])
        elif cur is not None and line.startswith("   ") and cur:  # the text of a long NAME
            cur[-1][1] = (cur[-1][1] + " " + line.strip()).strip()
        elif cur is not None and not line.strip():
            cur = None
        else:
            cur = None
            footer.append(line)
    while footer and not footer[-1].strip():
        footer.pop()
    while footer and not footer[0].strip():
        footer.pop(0)
    return desc, usage, sections, footer


def roff(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return ("\\&" + s) if s.startswith((".", "'")) else s


def man_page(name, version, desc, usage, sections, footer, see_also):
    out = ['.TH %s 1 "" "gpumemrec %s" "User Commands"' % (name.upper(), version), ".SH NAME",
           "%s \\- %s" % (roff(name), roff(desc)), ".SH SYNOPSIS", ".B " + roff(usage), ".SH DESCRIPTION", roff(desc)]
    for title in ("Positionals", "Subcommands", "Options"):
        if title in sections:
            out.append(".SH " + {"Positionals": "ARGUMENTS", "Subcommands": "COMMANDS", "Options": "OPTIONS"}[title])
            for n, t in sections[title]:
                out += [".TP", ".B " + roff(n), roff(t)]
    if footer:
        out += [".SH NOTES", ".nf"] + [roff(l) for l in footer] + [".fi"]
    out += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(1)" % roff(s) for s in see_also),
            ".PP", "docs/cli.md and README.md in /usr/share/doc/gpumemrec"]
    return "\n".join(out) + "\n"


def option_words(sections):
    words = []
    for n, _ in sections.get("Options", []):
        for part in n.split()[0].split(","):
            if part.startswith("-"):
                words.append(part)
    return words


COMPLETION = r'''# bash completion for gpumemrec (generated from its --help texts by packaging/gen_cli_docs.py)
_gpumemrec() {
    local cur=${COMP_WORDS[COMP_CWORD]} sub=${COMP_WORDS[1]} i opts
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%(subs)s --help --version" -- "$cur"))
        return
    fi
    if [ "$sub" = run ]; then
        for ((i = 2; i < COMP_CWORD; i++)); do
            if [ "${COMP_WORDS[i]}" = "--" ]; then
                COMPREPLY=($(compgen -c -- "$cur"))
                return
            fi
        done
    fi
    case "$sub" in
%(cases)s
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _gpumemrec gpumemrec
'''


def write_gz(path, text):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:  # reproducible
            f.write(text.encode("utf-8"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpumemrec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", default="")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "man1"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "completion"), exist_ok=True)
    root = parse(help_text(a.gpumemrec, []))
    subs = [n.split()[0] for n, _ in root[2].get("Subcommands", [])]
    if not subs:
        raise SystemExit("gen_cli_docs: no subcommands in 'gpumemrec --help'")
    pages = ["gpumemrec-" + s for s in subs]
    write_gz(os.path.join(a.out, "man1", "gpumemrec.1.gz"), man_page("gpumemrec", a.version, *root, see_also=pages))
    cases = []
    for s in subs:
        d = parse(help_text(a.gpumemrec, [s]))
        write_gz(os.path.join(a.out, "man1", "gpumemrec-%s.1.gz" % s),
                 man_page("gpumemrec-" + s, a.version, *d, see_also=["gpumemrec"]))
        cases.append('        %s) opts="%s" ;;' % (s, " ".join(option_words(d[2]))))
    with open(os.path.join(a.out, "completion", "gpumemrec"), "w") as f:
        f.write(COMPLETION % {"subs": " ".join(subs), "cases": "\n".join(cases)})
    print("gen_cli_docs: %d man pages, bash completion for %d subcommands" % (len(subs) + 1, len(subs)))


if __name__ == "__main__":
    main()
