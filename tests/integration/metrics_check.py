"""Scrapes GRID's Prometheus endpoints twice while a job runs and checks
what they serve (tests/integration/metrics_test.sh).

    metrics_check.py OUT_DIR SECONDS URL...

Each URL is scraped, then again SECONDS later; both scrapes are written to
OUT_DIR (for promtool) and checked: every sample belongs to a family with
HELP and TYPE lines before it, names and label sets are well formed, values
are numbers, and counters never go down. Then at least one switch's
grid_switch_job_data_total and the root's grid_root_completed_total must
have grown: the job is being served. Exit 1 with what is wrong."""
import os
import re
import sys
import time
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? '
                    r'(\S+)$')


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        if r.status != 200 or not r.headers.get("Content-Type", "").startswith("text/plain"):
            raise SystemExit(f"{url}: status {r.status}, {r.headers.get('Content-Type')}")
        return r.read().decode()


def parse(url, text):
    """{(name, labels): value}, checking the format as it goes."""
    helped, typed, samples = set(), {}, {}
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            helped.add(line.split(" ")[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            if kind not in ("counter", "gauge"):
                raise SystemExit(f"{url} line {n}: type {kind!r}")
            typed[name] = kind
        elif line:
            m = SAMPLE.match(line)
            if not m:
                raise SystemExit(f"{url} line {n}: not a sample: {line!r}")
            name, labels, value = m.group(1), m.group(2) or "", m.group(3)
            if name not in helped or name not in typed:
                raise SystemExit(f"{url} line {n}: {name} has no HELP or TYPE before it")
            if typed[name] == "counter" and not name.endswith("_total"):
                raise SystemExit(f"{url} line {n}: counter {name} does not end in _total")
            samples[(name, labels)] = float(value)
    return samples


def main():
    out, seconds, urls = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    first = {u: scrape(u) for u in urls}
    time.sleep(seconds)
    second = {u: scrape(u) for u in urls}
    grew = {"grid_switch_job_data_total": 0, "grid_root_completed_total": 0}
    for i, u in enumerate(urls):
        for k, text in (("a", first[u]), ("b", second[u])):
            with open(os.path.join(out, f"scrape{i}{k}.prom"), "w") as f:
                f.write(text)
        a, b = parse(u, first[u]), parse(u, second[u])
        for key, value in b.items():
            if key in a and key[0].endswith("_total") and value < a[key]:
                raise SystemExit(f"{u}: {key[0]}{key[1]} went down: {a[key]} -> {value}")
            if key[0] in grew and value > a.get(key, 0):
                grew[key[0]] += 1
        print(f"{u}: {len(b)} samples; moved: "
              f"{sum(1 for k, v in b.items() if v != a.get(k, 0))}")
    for name, n in grew.items():
        if n == 0:
            raise SystemExit(f"{name} did not grow between the scrapes {seconds} s apart")


if __name__ == "__main__":
    main()
