"""Per-scenario report: a JSON file with every figure and check, and an SVG of the admitted
rate against the limit over time with the fault windows shaded."""
import html
import json
import os

W, H, L, R, T, B = 960, 320, 60, 20, 40, 50
COLORS = ["#f4a261", "#e76f51", "#2a9d8f", "#8d99ae", "#e9c46a", "#b5838d"]


def write_json(path, result):
    with open(path, "w") as f:
        json.dump(result, f, indent=2, default=str)


def _x(t, t_end):
    return L + (W - L - R) * (t / t_end if t_end > 0 else 0)


def _y(v, v_max):
    return H - B - (H - T - B) * (v / v_max if v_max > 0 else 0)


def write_svg(path, title, series, limit, window_s, events, t_end, passed):
    v_max = max([limit * 1.5] + [v for _, v in series]) or 1
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    kinds = {}
    for ev in events:
        color = kinds.setdefault(ev["label"].split(" ")[0], COLORS[len(kinds) % len(COLORS)])
        x0 = _x(ev["start"], t_end)
        if ev.get("end") is None:
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2">'
                       '<title>%s</title></line>' % (x0, T, x0, H - B, color,
                                                     html.escape(ev["label"])))
        else:
            x1 = _x(ev["end"], t_end)
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" '
                       'fill-opacity="0.25"><title>%s</title></rect>'
                       % (x0, T, max(1.0, x1 - x0), H - T - B, color, html.escape(ev["label"])))
        out.append('<text x="%.1f" y="%d" fill="%s">%s</text>'
                   % (x0 + 2, T + 12 + 13 * (events.index(ev) % 4), color,
                      html.escape(ev["label"])))
    # axes and ticks
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B))
    step = max(1, int(t_end / 10))
    for s in range(0, int(t_end) + 1, step):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%ds</text>'
                   % (_x(s, t_end), H - B + 16, s))
    for frac in (0, 0.5, 1):
        v = v_max * frac
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d</text>' % (L - 4, _y(v, v_max) + 4, v))
    ly = _y(limit, v_max)
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62828" '
               'stroke-dasharray="6,4"/>' % (L, ly, W - R, ly))
    out.append('<text x="%d" y="%.1f" fill="#d62828" text-anchor="end">limit %d</text>'
               % (W - R, ly - 4, limit))
    pts = " ".join("%.1f,%.1f" % (_x(t, t_end), _y(v, v_max)) for t, v in series)
    out.append('<polyline points="%s" fill="none" stroke="#1d3557" stroke-width="1.5"/>' % pts)
    out.append('<text x="%d" y="20" font-size="14" font-weight="bold">%s — %s</text>'
               % (L, html.escape(title), "PASS" if passed else "FAIL"))
    out.append('<text x="%d" y="%d">admissions certainly inside the trailing %gs window (blue) vs '
               'the limit (red); shaded: faults</text>' % (L, H - 10, window_s))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def summary_lines(result):
    lines = ["%s  %s  (seed %s, %.0fs)" % ("PASS" if result["pass"] else "FAIL", result["scenario"],
                                         result["seed"], result["duration_s"])]
    for c in result["checks"]:
        fig = "" if c["figure"] is None else "  %s" % c["figure"]
        bnd = "" if c["bound"] is None else " (bound %s)" % c["bound"]
        lines.append("   %s %s%s%s %s" % ("ok " if c["pass"] else "BAD", c["name"], fig, bnd,
                                         c["detail"]))
    return lines


def report_paths(out_dir, name):
    return os.path.join(out_dir, name + ".json"), os.path.join(out_dir, name + ".svg")


def write_index(out_dir, profile, seconds, results):
    """index.html: every scenario of the run with its verdict, figures, checks and picture."""
    rows = []
    for r in results:
        name = "%s-%s" % (r["scenario"], r["seed"])
        status = "SKIP" if r.get("skipped") else ("PASS" if r["pass"] else "FAIL")
        color = {"PASS": "#2a9d8f", "FAIL": "#d62828", "SKIP": "#8d99ae"}[status]
        figs = "".join("<tr><td>%s</td><td>%s</td></tr>" % (html.escape(k), html.escape(str(v)))
                       for k, v in r.get("figures", {}).items())
        checks = "".join(
            '<li style="color:%s">%s %s%s</li>' % (
                "inherit" if c["pass"] else "#d62828", "&#10003;" if c["pass"] else "&#10007;",
                html.escape(c["name"]),
                "" if c["figure"] is None else ": <b>%s</b>%s" % (
                    html.escape(str(c["figure"])),
                    "" if c["bound"] is None else " (bound %s)" % html.escape(str(c["bound"]))))
            for c in r.get("checks", []))
        svg = os.path.join(out_dir, name + ".svg")
        img = '<img src="%s.svg" width="960">' % html.escape(name) if os.path.exists(svg) else ""
        extra = ""
        if r.get("skipped"):
            extra = "<p>needs %s</p>" % html.escape(", ".join(r["skipped"]))
        elif not r["pass"] and r.get("replay"):
            extra = "<p>replay: <code>%s</code></p>" % html.escape(r["replay"])
        rows.append('<section><h2><span style="color:%s">%s</span> %s <small>seed %s, %ss'
                    '</small></h2>%s%s<div style="display:flex;gap:2em"><ul>%s</ul>'
                    '<table>%s</table></div></section>'
                    % (color, status, html.escape(r["scenario"]), r["seed"],
                       r.get("duration_s", "-"), extra, img, checks, figs))
    failed = sum(1 for r in results if not r["pass"])
    page = ('<!doctype html><meta charset="utf-8"><title>Floodgate chaos report</title>'
            '<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}'
            'td{padding:0 1em 0 0;font-size:90%%}section{border-top:1px solid #ccc}</style>'
            '<h1>Floodgate chaos report</h1><p>%s profile, %d scenarios, %d failed, %ds</p>%s'
            % (html.escape(profile), len(results), failed, seconds, "".join(rows)))
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path
