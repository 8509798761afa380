// tenprof's report page: draws every section from the JSON in #tenprof-data (report/html_page.py).
// No library and nothing fetched: tables, charts and the icicle are plain DOM and SVG, so the page opens
// offline. Large tables render 200 rows at a time (filter and sort work on all of them).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("tenprof-data").textContent);
  const app = document.getElementById("app");
  const SVG = "http://www.w3.org/2000/svg";

  // ---- formatting ----
  function dur(ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return "";
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(2) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + " us";
    return Math.round(ns) + " ns";
  }
  function bytes(n) {
    if (n === null || n === undefined) return "";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = Math.abs(n);
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (n < 0 ? "-" : "") + (i ? v.toFixed(1) : v) + " " + units[i];
  }
  function pct(x, digits) { return x === null || x === undefined ? "" : (x * 100).toFixed(digits === undefined ? 1 : digits) + "%"; }
  function num(x) { return x === null || x === undefined ? "" : (Number.isInteger(x) ? x.toLocaleString("en") : x.toFixed(2)); }
  // A finding's numbers are named by their unit (first_step_ns, launch_cpu_us, share_of_gpu, power_w): the
  // value is written in a unit of its own size (11.52 s, not 11516825068 ns), so the unit is taken off
  // the label and the value alone says it; a key naming no unit is a plain number.
  const UNITS = [
    [/_ns$/, (v) => dur(v)], [/_us$/, (v) => dur(v * 1e3)], [/_ms$/, (v) => dur(v * 1e6)],
    [/_(pct|percent)$/, (v) => v.toFixed(1) + "%"], [/(^share_|_share$)/, (v) => pct(v)],
    [/_gbps$/, (v) => num(v) + " GB/s"], [/_mhz$/, (v) => num(v) + " MHz"], [/_w$/, (v) => num(v) + " W"],
    [/_c$/, (v) => num(v) + " °C"], [/(^|_)bytes(_|$)/, (v) => bytes(v)],
  ];
  const UNIT_SUFFIX = /_(ns|us|ms|pct|percent|gbps|mhz|w|c)$/;
  function quantity(key, v) {
    const label = key.replace(UNIT_SUFFIX, "").replace(/_/g, " ");
    if (typeof v !== "number") return [label, String(v)];
    const unit = UNITS.find(([pattern]) => pattern.test(key));
    return [label, unit ? unit[1](v) : num(v)];
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }
  function titled(node, text) { const t = svg("title"); t.textContent = text; node.append(t); return node; }
  // The analyses write -1 for "none" or "not recorded" in integer fields that cannot be negative: an id
  // (a load pattern's tensor_id), a position in the op sequence (free_op_seq: alive at the end;
  // next_use_op_seq: no use after the peak) or a size (allocator_peak_bytes, reserved_bytes). Shown as
  // JSON, such a -1 reads as a value: the field is left out instead, as a null is.
  const SENTINEL_KEY = /(^|_)(id|seq|index|bytes)$/;
  function withoutSentinels(key, value) { return value === -1 && SENTINEL_KEY.test(key) ? undefined : value; }
  function asJson(value) { return JSON.stringify(value, withoutSentinels, 1); }
  // the fields of a section's data that its drawing does not show, as JSON under "more data"
  function leftovers(parent, obj, shown) {
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) return;
    const rest = Object.fromEntries(Object.entries(obj).filter(([k, v]) => !shown.includes(k) && v !== null && !(Array.isArray(v) && !v.length)));
    if (!Object.keys(rest).length) return;
    const text = asJson(rest);
    parent.append(el("details", { class: "more" }, el("summary", { text: "more data: " + Object.keys(rest).join(", ") }),
      el("pre", { text: text.length > 50000 ? text.slice(0, 50000) + "\n…" : text })));
  }

  const toc = el("nav", { class: "toc" });
  function section(id, title) {
    const s = el("section", { id: id }, el("h2", { text: title }));
    app.append(s);
    toc.append(el("a", { href: "#" + id, text: title }));
    return s;
  }

  // ---- tables: sortable, filterable, rendered 200 rows at a time ----
  function table(parent, columns, rows, options) {
    const opts = options || {};
    const step = opts.page || 200;
    let shown = step, sortKey = opts.sort || null, sortDir = -1, query = "";
    const input = el("input", { type: "search", placeholder: "filter rows", "aria-label": "filter rows" });
    const count = el("span", { class: "count" });
    const t = el("table", { class: "grid" });
    const head = el("tr");
    for (const c of columns) {
      const th = el("th", { class: c.text ? "text" : "", text: c.label, "data-key": c.key });
      th.addEventListener("click", () => {
        sortDir = sortKey === c.key ? -sortDir : (c.text ? 1 : -1);
        sortKey = c.key; draw();
      });
      head.append(th);
    }
    const body = el("tbody");
    t.append(el("thead", {}, head), body);
    const more = el("button", { class: "more", text: "show more" });
    more.addEventListener("click", () => { shown += step; draw(); });
    input.addEventListener("input", () => { query = input.value.toLowerCase(); shown = step; draw(); });
    parent.append(el("div", { class: "tablebar" }, input, count), t, more);
    const value = (row, c) => (c.get ? c.get(row) : row[c.key]);
    function draw() {
      let found = rows;
      if (query) {
        found = rows.filter((r) => columns.some((c) => c.text && String(value(r, c) || "").toLowerCase().includes(query)));
      }
      if (sortKey) {
        const c = columns.find((x) => x.key === sortKey);
        found = found.slice().sort((a, b) => {
          const x = value(a, c), y = value(b, c);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * sortDir;
        });
      }
      body.replaceChildren();
      for (const row of found.slice(0, shown)) {
        const tr = el("tr");
        for (const c of columns) {
          const v = value(row, c);
          tr.append(el("td", { class: c.text ? "text" : "", text: c.fmt ? c.fmt(v, row) : (v === null || v === undefined ? "" : String(v)) }));
        }
        body.append(tr);
      }
      for (const th of head.children) {
        th.classList.toggle("sorted-asc", th.dataset.key === sortKey && sortDir === 1);
        th.classList.toggle("sorted-desc", th.dataset.key === sortKey && sortDir === -1);
      }
      count.textContent = `${Math.min(shown, found.length).toLocaleString("en")} of ${found.length.toLocaleString("en")} rows` +
        (found.length !== rows.length ? ` (${rows.length.toLocaleString("en")} in all)` : "");
      more.style.display = found.length > shown ? "" : "none";
    }
    draw();
    return t;
  }

  // ---- header and summary ----
  const s = data.summary || {};
  app.append(el("header", {}, el("h1", { text: "tenprof · " + (data.title || "") }),
    el("div", { class: "meta", text: [s.devices && s.devices.join(", "), s.versions, data.profile].filter(Boolean).join(" · ") })));
  app.append(toc);

  function drawFindings() {
    const found = data.findings;
    if (!found) return;
    const sec = section("findings", "Findings");
    if (!found.length) sec.append(el("p", { class: "note", text: "No finding: nothing the checks look for stood out." }));
    found.forEach((f, i) => {
      const d = el("details", { class: "finding", "data-id": f.id });
      if (i === 0) d.open = true;
      // a GPU-time finding the host's work hides: no step time, the GPU time it would save once the host is faster
      const saved = (f.numbers || {}).gpu_time_saved_ns;
      // a memory finding costs no time: the run fails (urgent, ranked first) or memory is wasted
      const memory = (f.numbers || {}).bytes_saved;
      // host time the recording shows that the un-profiled steps hide: no step time, what it took as recorded
      const recorded = (f.numbers || {}).recorded_cost_ns;
      const cost = f.cost_ns
        ? el("span", { class: "cost", text: dur(f.cost_ns) })
        : f.urgent
          ? el("span", { class: "cost", text: "urgent" })
          : el("span", {
              class: "cost gpu-only",
              text: saved ? `0 of the step, ${dur(saved)} GPU` : memory ? bytes(memory) : recorded ? `0 un-profiled, ${dur(recorded)} as recorded` : "",
            });
      const head = el("summary", {}, cost, f.title);
      d.append(head);
      const list = (title, items) => {
        if (!items || !items.length) return;
        d.append(el("h4", { text: title }), el("ul", {}, ...items.map((x) => el("li", { text: x }))));
      };
      list("Seen", f.seen);
      list("Where", f.where);
      if (f.why) d.append(el("h4", { text: "Why" }), el("p", { text: f.why }));
      if (f.fix) d.append(el("h4", { text: "Fix" }), el("p", { text: f.fix }));
      if (f.numbers && Object.keys(f.numbers).length) {
        d.append(el("h4", { text: "Numbers" }), el("table", { class: "grid numbers" }, ...Object.entries(f.numbers).map(([k, v]) => {
          const [label, text] = quantity(k, v);
          return el("tr", { "data-key": k }, el("td", { class: "text", text: label }), el("td", { text: text }));
        })));
      }
      sec.append(d);
    });
    if (data.not_judged && data.not_judged.length) {
      sec.append(el("p", { class: "note", text: "Not judged: " + data.not_judged.join("; ") }));
    }
  }

  function drawSummary() {
    if (!data.summary) return;
    const sec = section("summary", "Summary");
    const o = s.overhead || {};
    const cards = [
      // a recording without marked steps has no step to time: said so rather than "0 ns" or a blank card
      ["steps", s.step_count], ["median step", s.step_count ? dur(s.step_median_ns) : "no steps"],
      ["GPU busy in the steps", s.steps_window_ns ? pct(s.steps_gpu_busy_ns / s.steps_window_ns) : "no steps"],
      ["kernels", num(s.kernel_count)], ["kernel time", dur(s.kernel_time_ns)], ["ops", num(s.op_count)],
      ["un-profiled step (" + (o.method || "not measured") + ")", o.unprofiled_step_ns ? dur(o.unprofiled_step_ns) : "unknown"],
      ["profiler's share of a step", o.profiler_share === undefined || o.profiler_share === null ? "unknown" : pct(o.profiler_share)],
    ];
    if (s.memory_peak) {
      // a trace without allocator totals: summed from its events' bytes, a lower bound
      const atLeast = s.memory_peak.summed_from_events ? "at least " : "";
      cards.push(["memory peak (" + s.memory_peak.device + ")", atLeast + bytes(s.memory_peak.allocated_bytes)]);
    }
    if (s.attribution && s.attribution.kernel_time_ns) {  // no kernels: no share to give
      cards.push(["kernel time with a line", pct(s.attribution.user_line_percent / 100)]);
    }
    sec.append(el("div", { class: "cards" }, ...cards.map(([k, v]) => el("div", { class: "card" }, el("div", { class: "v", text: String(v === undefined ? "" : v) }), el("div", { class: "k", text: k })))));
    if (o.note) sec.append(el("p", { class: "note", text: "Overhead: " + o.note }));
    for (const n of s.notes || []) sec.append(el("p", { class: "note", text: n }));
  }

  // ---- where each step went: its wall time in parts that add up to it (analyses/step_time.py) ----
  const STEP_PARTS = [
    ["gpu", "GPU running", "#4c78a8"], ["collective", "in collectives only", "#72b7b2"],
    ["queued", "GPU waiting for launched work", "#9ecae9"],
    ["sync", "host in a sync, GPU idle", "#e45756"], ["allocator", "host allocating or freeing", "#f58518"],
    ["cuda_api", "host in other CUDA calls", "#ffbf79"], ["data_loading", "host in the DataLoader", "#54a24b"],
    ["compile", "host compiling or checking guards", "#b279a2"], ["dispatch", "host in torch ops", "#eeca3b"],
    ["python", "host in Python outside torch ops", "#bab0ac"], ["capture", "the profiler's own work", "#d8d8d8"],
  ];
  function drawStepTime() {
    const st = data.step_time;
    if (!st || !st.steps || !st.steps.length) return;
    const sec = section("step_time", "Where each step went");
    const med = st.mean_step, wall = med.wall_ns || 1;
    const W = 960, H = 34;
    const bar = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "step-time-bar", role: "img" });
    // a trace recorded without the host's ops: its time outside CUDA calls is not known to be Python
    const parts = st.host_ops_recorded === false
      ? STEP_PARTS.map(([key, label, colour]) => [key, key === "python" ? "host, its work not recorded (no CPU ops in the trace)" : label, colour])
      : STEP_PARTS;
    const shown = parts.filter(([key]) => (med.parts[key] || 0) > 0);
    let x = 0;
    for (const [key, label, colour] of shown) {
      const v = med.parts[key], w = v / wall * W;
      const r = svg("rect", { x: x, y: 4, width: Math.max(w, 0.5), height: H - 8, fill: colour, "data-part": key });
      titled(r, `${label}: ${dur(v)} (${pct(v / wall)})`);
      bar.append(r);
      x += w;
    }
    const what = st.marked ? `the mean of ${med.steps.length} steady steps (${dur(wall)})` : `the profiled span, ${dur(wall)} (no steps were marked)`;
    sec.append(el("p", { class: "note", text: `Each instant of ${what}, in one part: the GPU running, else what the host was doing while the GPU waited. The parts add up to the step. The profiler's own work (${st.capture_method || "not known"}) is taken out of the host's parts in the mean step; the table per step is as recorded.` }));
    sec.append(el("div", { class: "legend" }, ...shown.map(([, label, colour]) => el("span", {}, el("i", { style: `background: ${colour}` }), label))), bar);
    table(sec, [
      { key: "label", label: "part", text: true }, { key: "ns", label: "per step", fmt: dur }, { key: "share", label: "share", fmt: (v) => pct(v) },
    ], shown.map(([key, label]) => ({ label: label, ns: med.parts[key], share: med.parts[key] / wall })));
    if (st.steps.length > 1) {
      const used = parts.filter(([key]) => st.steps.some((s) => s.parts[key] > 0));
      table(sec, [
        { key: "step", label: "step" }, { key: "wall_ns", label: "wall", fmt: dur },
        ...used.map(([key]) => ({ key: key, label: key === "python" && st.host_ops_recorded === false ? "host (not recorded)" : key.replace(/_/g, " "), fmt: dur })),
      ], st.steps.map((s) => ({ step: s.step, wall_ns: s.wall_ns, ...s.parts })));
    }
  }

  // ---- per-step stacked bars ----
  const PARTS = ["compute", "communication", "transfers", "idle"];
  function drawSteps() {
    const steps = data.steps;
    if (!steps || !steps.length) return;
    const sec = section("steps", "Steps");
    const W = 960, H = 240, L = 70, B = 28, T = 10;
    const sorted = steps.map((x) => x.duration_ns).sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    const top = Math.min(sorted[sorted.length - 1], 3 * median) || 1;
    const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "steps-chart", role: "img" });
    const bw = (W - L - 10) / steps.length;
    chart.append(svg("line", { x1: L, y1: H - B, x2: W, y2: H - B, class: "axis" }), svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    for (const f of [0, 0.5, 1]) {
      const y = H - B - f * (H - B - T);
      const label = svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" }); label.textContent = dur(f * top);
      chart.append(label);
    }
    steps.forEach((st, i) => {
      let y = H - B;
      const x = L + i * bw + bw * 0.1;
      const g = svg("g", { class: "step-bar", "data-step": st.step });
      for (const part of PARTS) {
        const v = st[part + "_ns"] || 0;
        const h = Math.min(v, Math.max(0, top - (H - B - y) / (H - B - T) * top)) / top * (H - B - T);
        if (h <= 0) continue;
        y -= h;
        g.append(svg("rect", { x: x, y: y, width: Math.max(bw * 0.8, 1), height: h, fill: `var(--${part})` }));
      }
      titled(g, `step ${st.step}: ${dur(st.duration_ns)}\n` + PARTS.map((p) => `${p} ${dur(st[p + "_ns"])}`).join("\n"));
      if (st.duration_ns > top) {
        const mark = svg("text", { x: x + bw * 0.4, y: T + 10, "text-anchor": "middle" }); mark.textContent = "▲ " + dur(st.duration_ns);
        g.append(mark);
      }
      chart.append(g);
      if (steps.length <= 40 || i % Math.ceil(steps.length / 20) === 0) {
        const t = svg("text", { x: x + bw * 0.4, y: H - B + 14, "text-anchor": "middle" }); t.textContent = st.step;
        chart.append(t);
      }
    });
    sec.append(el("div", { class: "legend" }, ...PARTS.map((p) => el("span", {}, el("i", { style: `background: var(--${p})` }), p))), chart);
    sec.append(el("p", { class: "note", text: "Each bar is a step's time, split: kernels computing, then communication (NCCL), then copies, then GPU idle. Bars taller than 3x the median step are cut at the top and marked with their time." }));
    table(sec, [
      { key: "step", label: "step" }, { key: "duration_ns", label: "time", fmt: dur },
      ...PARTS.map((p) => ({ key: p + "_ns", label: p, fmt: dur })),
    ], steps);
  }

  // ---- call tree as an icicle: click a node to zoom in, the path above to zoom out ----
  function drawTree() {
    if (!data.calltree) return;
    const sec = section("calltree", "Call tree");
    const METRIC = { "GPU time": 3, "CPU time": 4, calls: 5 };
    // flat nodes, parents before their children: [label, kind, place, gpu, cpu, calls, parent index]
    const all = data.calltree.nodes.map((r) => ({ label: r[0], kind: r[1], place: r[2], v: [0, 0, 0, r[3], r[4], r[5]], parent: null, children: [] }));
    data.calltree.nodes.forEach((r, i) => { if (r[6] >= 0) { all[i].parent = all[r[6]]; all[r[6]].children.push(all[i]); } });
    const root = all[0];
    let focus = root, metric = 3, query = "";
    const select = el("select", { "aria-label": "metric" }, ...Object.keys(METRIC).map((k) => el("option", { value: METRIC[k], text: k })));
    if (!root.v[3]) { select.value = "4"; metric = 4; }
    const search = el("input", { type: "search", placeholder: "search frames, ops, kernels", "aria-label": "search the tree" });
    const crumbs = el("span", { class: "crumbs" });
    const box = el("div", { class: "icicle" });
    const tip = el("div", { class: "tip" });
    document.body.append(tip);
    sec.append(el("div", { class: "icicle-bar" }, select, search, crumbs), box);
    sec.append(el("p", { class: "note", text: `Widths follow the chosen metric, inclusive. Click a node to zoom into it, a name above to zoom out. Nodes under ${(data.calltree.min_share * 100).toFixed(2)}% of the run's GPU and CPU time are left out.` }));
    select.addEventListener("change", () => { metric = Number(select.value); draw(); });
    search.addEventListener("input", () => { query = search.value.toLowerCase(); draw(); });
    function draw() {
      box.replaceChildren();
      crumbs.replaceChildren();
      const path = [];
      for (let n = focus; n; n = n.parent) path.unshift(n);
      path.forEach((n, i) => {
        const c = el("span", { text: (i ? " › " : "") + n.label.slice(0, 40) });
        c.addEventListener("click", () => { focus = n; draw(); });
        crumbs.append(c);
      });
      const width = box.clientWidth || 1200;
      const total = focus.v[metric] || 1;
      let depth = 0;
      function place(node, x, d, w) {
        if (w < 2 || d > 60) return;
        depth = Math.max(depth, d);
        const div = el("div", { class: "node " + (["frame", "op", "kernel", "scope", "root"].includes(node.kind) ? node.kind : "other"), "data-label": node.label });
        div.style.left = x + "px"; div.style.top = d * 21 + "px"; div.style.width = w + "px";
        div.textContent = node.label;
        if (query) div.classList.add(node.label.toLowerCase().includes(query) ? "match" : "dim");
        div.addEventListener("click", (e) => { e.stopPropagation(); focus = node; draw(); });
        div.addEventListener("mousemove", (e) => {
          tip.style.display = "block"; tip.style.left = e.clientX + 12 + "px"; tip.style.top = e.clientY + 12 + "px";
          tip.textContent = `${node.label}${node.place ? " · " + node.place : ""} · GPU ${dur(node.v[3])} · CPU ${dur(node.v[4])} · ${num(node.v[5])} calls`;
        });
        div.addEventListener("mouseleave", () => { tip.style.display = "none"; });
        box.append(div);
        let cx = x;
        for (const c of node.children) {
          const cw = (c.v[metric] / total) * width;
          place(c, cx, d + 1, cw);
          cx += cw;
        }
      }
      place(focus, 0, 0, width);
      box.style.height = (depth + 1) * 21 + 2 + "px";
      box.dataset.focus = focus.label;
    }
    draw();
  }

  function drawTallies() {
    if (!data.tallies || !data.tallies.length) return;
    const sec = section("tallies", "Tallies");
    for (const t of data.tallies) {
      sec.append(el("h3", { text: t.title }));
      table(sec, [
        { key: "name", label: "name", text: true }, { key: "total_ns", label: t.time_meaning || "time", fmt: dur },
        { key: "percent", label: "%", fmt: (v) => (v === null || v === undefined ? "" : v.toFixed(1)) },
        { key: "calls", label: "calls", fmt: num }, { key: "average_ns", label: "average", fmt: dur },
        { key: "min_ns", label: "min", fmt: dur }, { key: "max_ns", label: "max", fmt: dur },
      ], t.rows, { sort: "total_ns", page: 25 });
    }
  }

  // ---- memory: allocated over time, the peak marked; the tensors pass's holders at the peak ----
  function drawMemory() {
    const m = data.memory_timeline, holders = data.memory;
    if (!m && !holders) return;
    const sec = section("memory", "Memory");
    if (m) {
      const W = 960, H = 200, L = 70, B = 24, T = 10;
      // times count from the recording's start, as the peak's; the axis spans the memory events (they may
      // begin seconds in: the first op can come long before the first allocation), both ends labelled
      const tmin = m.t_ns[0], tmax = m.t_ns[m.t_ns.length - 1], ymax = m.peak_bytes || 1;
      const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "memory-chart" });
      const X = (t) => L + ((t - tmin) / (tmax - tmin || 1)) * (W - L - 10), Y = (b) => H - B - (b / ymax) * (H - B - T);
      chart.append(svg("line", { x1: L, y1: H - B, x2: W, y2: H - B, class: "axis" }), svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
      // a step line: the allocated total holds from one allocator event to the next
      const points = m.t_ns.map((t, i) => (i ? `${X(t).toFixed(1)},${Y(m.allocated[i - 1]).toFixed(1)} ` : "") + `${X(t).toFixed(1)},${Y(m.allocated[i]).toFixed(1)}`).join(" ");
      chart.append(svg("polyline", { points: points, fill: "none", stroke: "var(--compute)", "stroke-width": 1.5 }));
      // allocated at each step's end, dashed: the line a leak climbs by (memory-growth says how steeply)
      const ends = (m.step_ends || []).filter(([t]) => t >= tmin && t <= tmax);
      if (ends.length > 1) {
        chart.append(svg("polyline", { points: ends.map(([t, b]) => `${X(t).toFixed(1)},${Y(b).toFixed(1)}`).join(" "), fill: "none", stroke: "var(--bad)", "stroke-width": 1, "stroke-dasharray": "4 3", class: "step-ends" }));
        for (const [t, b] of ends) chart.append(titled(svg("circle", { cx: X(t), cy: Y(b), r: 2.5, fill: "var(--bad)" }), `${bytes(b)} allocated at a step's end`));
      }
      const into = `${dur(m.peak_t_ns)} into the recording`;  // the text report's words for the same number
      chart.append(titled(svg("circle", { cx: X(m.peak_t_ns), cy: Y(m.peak_bytes), r: 4, fill: "var(--bad)", class: "peak", "data-t-ns": m.peak_t_ns }), `peak ${bytes(m.peak_bytes)}, ${into}`));
      for (const [v, y] of [[ymax, T + 4], [0, H - B]]) {
        const t = svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" }); t.textContent = bytes(v); chart.append(t);
      }
      const begin = svg("text", { x: L, y: H - 6, "text-anchor": "start" }); begin.textContent = dur(tmin);
      const end = svg("text", { x: W - 10, y: H - 6, "text-anchor": "end" }); end.textContent = dur(tmax);
      chart.append(begin, end);
      const growth = (data.findings || []).find((f) => f.id === "memory-growth");
      const grows = growth ? ` Dashed: allocated at each step's end, growing ${bytes(growth.numbers.growth_bytes_per_step)} a step.` : ends.length > 1 ? " Dashed: allocated at each step's end." : "";
      sec.append(el("p", { class: "note", text: `Allocated on ${m.device} over the run; peak ${bytes(m.peak_bytes)}, ${into}.${grows}` }), chart);
    }
    // the timeline's allocator reports: what held the peak, by the line and op that made it
    const held = ((data.summary || {}).memory_peak || {}).held || [];
    if (held.length) {
      sec.append(el("h3", { text: "Held at the peak, by line (allocator reports)" }));
      table(sec, [
        { key: "total_bytes", label: "bytes", fmt: bytes }, { key: "count", label: "blocks", fmt: num },
        { key: "line", label: "made at", text: true }, { key: "op", label: "by", text: true },
        { key: "steps", label: "steps", fmt: num },
      ], held, { sort: "total_bytes" });
    }
    if (holders) {
      sec.append(el("h3", { text: `At the peak (${bytes(holders.peak_bytes)}, ${holders.peak_op || ""} ${holders.peak_line || ""})` }));
      table(sec, [
        { key: "total_bytes", label: "bytes", fmt: bytes, get: (r) => r.total_bytes || r.nbytes },
        { key: "count", label: "tensors", fmt: num },
        { key: "what", label: "what", text: true }, { key: "creator_op", label: "made by", text: true },
        { key: "line", label: "at", text: true },
      ], holders.at_peak || [], { sort: "total_bytes" });
      leftovers(sec, holders, ["at_peak", "peak_bytes", "peak_op", "peak_line"]);
    }
  }

  function drawForests() {
    const d = data.drawings || {};
    if (!d.forest_svg && !d.blame_svg && !d.forest_text) return;
    const sec = section("forests", "Tensor forest and blame");
    for (const [key, title] of [["blame_svg", "Blame forest: the tensors memory stalls waited on (the blamed path in red)"], ["forest_svg", "Tensor forest: bases and their views"]]) {
      if (!d[key]) continue;
      // as an image: an SVG file from the profile's folder is shown, never run (no script, no handlers)
      const box = el("div", { class: "drawing", "data-drawing": key });
      const svgText = d[key].replace(/^[\s\S]*?(<svg)/, "$1");
      box.append(el("img", { alt: title, src: "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(svgText))) }));
      sec.append(el("h3", { text: title }), box);
    }
    if (!d.forest_svg && d.forest_text) {
      sec.append(el("p", { class: "note", text: "Graphviz's dot was not installed when this page was made: the forest as text." }), el("pre", { text: d.forest_text }));
    }
  }

  function drawStallCost() {
    const rows = data.tensor_stall_cost;
    if (!rows || !rows.length) return;
    const sec = section("tensor_stall_cost", "Tensor stall cost");
    table(sec, [
      { key: "share", label: "share of memory stalls", fmt: (v) => pct(v, 2) },
      { key: "tensor", label: "tensor", text: true }, { key: "made_by", label: "made by", text: true },
      { key: "ops", label: "read by", text: true, get: (r) => (r.ops || []).join(", ") },
      { key: "read_as", label: "how it was read", text: true },
      { key: "advice", label: "what to do", text: true },
      { key: "inferred", label: "inferred", get: (r) => (r.samples ? r.inferred / r.samples : 0), fmt: (v) => (v ? pct(v, 0) : "") },
    ], rows, { sort: "share" });
  }

  function drawAccessPatterns() {
    const rows = data.access_patterns;
    if (!rows || !rows.length) return;
    const sec = section("access_patterns", "Uncoalesced reads");
    table(sec, [
      { key: "kind", label: "pattern", text: true }, { key: "tensor", label: "tensor", text: true },
      { key: "op", label: "op", text: true }, { key: "line", label: "line", text: true },
      { key: "sectors", label: "sectors/request", get: (r) => (r.requests ? r.sectors / r.requests : null), fmt: (v) => (v === null ? "" : v.toFixed(1)) },
      { key: "min_sectors", label: "ideal", get: (r) => (r.requests ? r.min_sectors / r.requests : null), fmt: (v) => (v === null ? "" : v.toFixed(1)) },
      { key: "stride", label: "stride (B)", fmt: num }, { key: "made_at", label: "made at", text: true },
    ], rows);
  }

  // ---- counters: a table per kernel and the speed-of-light chart (each kernel a point sized by time) ----
  function drawCounters() {
    const c = data.counters;
    if (!c || !c.operators || !c.operators.length) return;
    const sec = section("counters", "Counters");
    const rows = [];
    for (const op of c.operators) for (const k of op.kernels || []) rows.push({ op: op.op, line: op.line, ...k, ...(k.metrics || {}) });
    const W = 520, H = 420, L = 50, B = 40, T = 10, R = 10;
    const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "roofline" });
    const X = (p) => L + (Math.min(p, 100) / 100) * (W - L - R), Y = (p) => H - B - (Math.min(p, 100) / 100) * (H - B - T);
    chart.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }), svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    chart.append(svg("line", { x1: X(60), y1: T, x2: X(60), y2: H - B, stroke: "var(--line)", "stroke-dasharray": "4 3" }));
    chart.append(svg("line", { x1: L, y1: Y(60), x2: W - R, y2: Y(60), stroke: "var(--line)", "stroke-dasharray": "4 3" }));
    const xl = svg("text", { x: (L + W) / 2, y: H - 8, "text-anchor": "middle" }); xl.textContent = "memory throughput, % of peak";
    const yl = svg("text", { x: 14, y: H / 2, transform: `rotate(-90 14 ${H / 2})`, "text-anchor": "middle" }); yl.textContent = "compute (SM or tensor pipe), % of peak";
    chart.append(xl, yl);
    for (const p of [0, 50, 100]) {
      const tx = svg("text", { x: X(p), y: H - B + 14, "text-anchor": "middle" }); tx.textContent = p + "%";
      const ty = svg("text", { x: L - 6, y: Y(p) + 4, "text-anchor": "end" }); ty.textContent = p + "%";
      chart.append(tx, ty);
    }
    const tmax = Math.max(...rows.map((r) => r.time_ns || 0), 1);
    const colour = { "compute-bound": "var(--compute)", "memory-bound": "var(--transfers)", "launch-bound": "var(--idle)", "occupancy-bound": "var(--communication)", "latency-bound": "var(--bad)" };
    for (const r of rows) {
      if (r.memory_throughput_pct === undefined || r.sm_throughput_pct === undefined) continue;
      const y = Math.max(r.sm_throughput_pct || 0, r.tensor_pipe_pct || 0);
      const dot = svg("circle", { cx: X(r.memory_throughput_pct), cy: Y(y), r: 3 + 14 * Math.sqrt((r.time_ns || 0) / tmax), fill: colour[r.verdict] || "var(--muted)", "fill-opacity": 0.6, stroke: "var(--fg)", "stroke-width": 0.5, class: "op-point" });
      chart.append(titled(dot, `${r.op} (${r.line || ""})\n${r.name}\n${r.verdict}: memory ${r.memory_throughput_pct.toFixed(1)}%, compute ${y.toFixed(1)}%, ${dur(r.time_ns)}`));
    }
    sec.append(el("p", { class: "note", text: "Each kernel a point, its area its GPU time; the axes are Nsight Compute's throughputs as a share of this GPU's own peaks (the dashed lines: 60%, near peak)." }), chart);
    table(sec, [
      { key: "op", label: "op", text: true }, { key: "line", label: "line", text: true }, { key: "name", label: "kernel", text: true },
      { key: "time_ns", label: "time", fmt: dur }, { key: "launches", label: "launches", fmt: num }, { key: "verdict", label: "verdict", text: true },
      { key: "sm_throughput_pct", label: "SM %", fmt: num }, { key: "memory_throughput_pct", label: "memory %", fmt: num },
      { key: "achieved_occupancy_pct", label: "occupancy %", fmt: num }, { key: "arithmetic_intensity", label: "FLOP/byte", fmt: num },
    ], rows, { sort: "time_ns" });
    for (const w of c.warnings || []) sec.append(el("p", { class: "note", text: w }));
    leftovers(sec, c, ["schema_version", "operators", "warnings"]);
  }

  function drawPerfModel() {
    const m = data.perf_model;
    if (!m || ((!m.ops || !m.ops.length) && (!m.user || !m.user.length))) return;
    const sec = section("perf_model", "Performance model");
    const head = [`${m.modelled_percent.toFixed(0)}% of kernel time has FLOP formulas`, m.peaks];
    if (m.mfu_percent !== null) head.push(`MFU ${m.mfu_percent.toFixed(1)}% of ${m.mfu_pipe} (${num(m.mfu_peak_tflops)} TFLOP/s) on the profiled steps` +
      (m.unprofiled_mfu_percent !== null ? `, ${m.unprofiled_mfu_percent.toFixed(1)}% on the step time measured with the capture off` : ""));
    if (m.tokens_per_s !== null) head.push(`${Math.round(m.tokens_per_s).toLocaleString("en")} tokens/s`);
    sec.append(el("p", { class: "note", text: head.join(" · ") }));
    // speed of light of the ops holding the most kernel time: a bar per op, its length the share of the ideal
    const top = m.ops.slice(0, 12), W = 960, L = 330, H = 22 * top.length + 24;
    const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "sol-chart" });
    top.forEach((op, i) => {
      const y = 6 + i * 22, sol = op.speed.sol_percent;
      const label = svg("text", { x: L - 8, y: y + 13, "text-anchor": "end" });
      const text = `${op.name.replace(/^aten::/, "")} ${op.shapes}`;
      label.textContent = text.length > 46 ? text.slice(0, 45) + "…" : text;
      chart.append(label, svg("rect", { x: L, y: y, width: W - L - 90, height: 16, fill: "var(--idle)", "fill-opacity": 0.35 }));
      if (sol !== null) {
        const bar = svg("rect", { x: L, y: y, width: (Math.min(sol, 100) / 100) * (W - L - 90), height: 16, fill: sol < 40 ? "var(--bad)" : "var(--compute)", class: "sol-bar" });
        chart.append(titled(bar, `${op.name} ${op.shapes}\n${dur(op.speed.gpu_ns)} measured, ${dur(op.speed.ideal_ns)} at the speed of light (${op.pipe}, ${op.bound}-bound)`));
      }
      const v = svg("text", { x: W - 84, y: y + 13 }); v.textContent = sol === null ? "unknown" : sol > 100 ? ">100% (cache)" : sol.toFixed(0) + "% of SOL";
      chart.append(v);
    });
    sec.append(chart);
    table(sec, [
      { key: "name", label: "op", text: true }, { key: "shapes", label: "shapes", text: true }, { key: "calls", label: "calls", fmt: num },
      { key: "gpu_ns", label: "GPU time", get: (r) => r.speed.gpu_ns, fmt: dur },
      { key: "tflops", label: "TFLOP/s", get: (r) => r.speed.tflops_per_s, fmt: num },
      { key: "gbs", label: "GB/s", get: (r) => r.speed.gbytes_per_s, fmt: num },
      { key: "sol", label: "SOL %", get: (r) => r.speed.sol_percent, fmt: num },
      { key: "pipe", label: "peak", text: true }, { key: "line", label: "line", text: true },
    ], m.ops, { sort: "gpu_ns" });
    if (m.unknown && m.unknown.length) {
      const lost = m.unknown.reduce((a, u) => a + u.gpu_ns, 0);
      sec.append(el("p", { class: "note", text: `not modelled: ${dur(lost)}: ` + m.unknown.slice(0, 6).map((u) => `${u.name} ${dur(u.gpu_ns)} (${u.why})`).join(", ") }));
    }
    leftovers(sec, m, ["ops", "unknown", "peaks", "mfu_percent", "unprofiled_mfu_percent", "mfu_pipe", "mfu_peak_tflops", "modelled_percent", "tokens_per_s"]);
  }

  function drawStalls() {
    const st = data.stalls;
    if (!st || !st.kernels || !st.kernels.length) return;
    const sec = section("stalls", "Stalls");
    for (const k of st.kernels) {
      const block = el("div", { class: "kernel-block" });
      block.append(el("h4", { text: `${k.where || ""} · ${k.name}` }), el("div", { class: "note", text: `${num(k.samples)} samples, ${pct(k.memory_share)} waiting on memory` }));
      table(block, [
        { key: "share", label: "share", fmt: (v) => pct(v) }, { key: "text", label: "instruction", text: true },
        { key: "reasons", label: "stall reasons", text: true, get: (r) => Object.entries(r.reasons || {}).map(([a, b]) => `${a} ${Math.round(b)}`).join(", ") },
        { key: "source", label: "source", text: true, get: (r) => [r.source, r.source_text].filter(Boolean).join("  ") },
        { key: "shifted_in", label: "blame shifted in", fmt: (v) => (v ? Math.round(v).toLocaleString("en") : "") },
      ], k.hot || [], { page: 10 });
      sec.append(block);
    }
    leftovers(sec, st, ["kernels"]);
  }

  // ---- diff: the comparison with another run (tenprof diff --html), lines that explain it first ----
  function drawDiff() {
    const d = data.diff;
    if (!d) return;
    const sec = section("diff", "What changed");
    const st = d.step;
    sec.append(el("p", { class: "note", text: `Before: ${d.before.name} (${d.before.device}, torch ${d.before.torch_version}); after: ${d.after.name} (${d.after.device}, torch ${d.after.torch_version})` }));
    sec.append(el("p", {}, el("strong", { text: `Step ${dur(st.before_ns)} → ${dur(st.after_ns)} (${st.delta_ns >= 0 ? "+" : ""}${dur(st.delta_ns)}): ` }),
      `${st.beyond_noise ? "beyond" : "within"} the step-to-step noise (${st.test}${st.p_value === null ? "" : ", p = " + st.p_value.toFixed(3)})`));
    sec.append(el("p", { class: "note", text: `Split by ${d.basis} time: what has no line of yours ${dur(d.no_line_delta_ns)}, not in any line ${dur(d.remainder_ns)}.` }));
    sec.append(el("h3", { text: "Python lines, per step" }));
    table(sec, [
      { key: "what", label: "line", text: true }, { key: "before_ns", label: "GPU before", fmt: dur }, { key: "after_ns", label: "GPU after", fmt: dur },
      { key: "delta", label: "GPU change", get: (r) => r.after_ns - r.before_ns, fmt: dur },
      { key: "before_cpu_ns", label: "CPU before", fmt: dur }, { key: "after_cpu_ns", label: "CPU after", fmt: dur },
      { key: "cpu_delta", label: "CPU change", get: (r) => r.after_cpu_ns - r.before_cpu_ns, fmt: dur },
    ], d.lines || [], { page: 25 });
    for (const [key, title] of [["kernels", "Kernels, per step"], ["ops", "Ops, per step"]]) {
      sec.append(el("h3", { text: title }));
      table(sec, [
        { key: "what", label: key === "ops" ? "op and input shapes" : "kernel", text: true },
        { key: "delta", label: "change", get: (r) => r.after_ns - r.before_ns, fmt: dur },
        { key: "before_ns", label: "before", fmt: dur }, { key: "after_ns", label: "after", fmt: dur },
        { key: "status", label: "", get: (r) => (!r.before_count && r.after_count ? "new" : r.before_count && !r.after_count ? "gone" : "") },
      ], d[key] || [], { page: 15 });
    }
    const moved = [...(d.vanished || []).map((x) => "gone: " + x), ...(d.appeared || []).map((x) => "new: " + x)];
    if (moved.length) sec.append(el("h3", { text: "Findings" }), el("ul", {}, ...moved.map((x) => el("li", { text: x }))));
  }

  // ---- ranks: each rank's step split side by side, the stragglers outlined ----
  function drawRanks() {
    const r = data.ranks;
    if (!r || !r.ranks || !r.ranks.length) return;
    const sec = section("ranks", "Ranks");
    sec.append(el("p", { class: "note", text: `${r.ranks.length} ranks on ${r.hosts.join(", ")}; ${r.clock_method}` }));
    const slow = new Set((r.stragglers || []).map((x) => x.rank));
    const parts = [["compute_ns", "compute"], ["exposed_ns", "communication"], ["transfers_ns", "transfers"], ["idle_ns", "idle"]];
    const W = 960, L = 90, H = 26 * r.ranks.length + 30;
    const top = Math.max(...r.ranks.map((x) => x.step_ns || 0), 1);
    const chart = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "ranks-chart" });
    r.ranks.forEach((rank, i) => {
      const y = 8 + i * 26;
      const label = svg("text", { x: L - 8, y: y + 14, "text-anchor": "end" }); label.textContent = `rank ${rank.rank}` + (slow.has(rank.rank) ? " ◀ slow" : "");
      chart.append(label);
      const g = svg("g", { class: "rank-bar" + (slow.has(rank.rank) ? " straggler" : ""), "data-rank": rank.rank });
      let x = L;
      for (const [key, part] of parts) {
        const w = ((rank[key] || 0) / top) * (W - L - 20);
        if (w > 0) g.append(svg("rect", { x: x, y: y, width: w, height: 20, fill: `var(--${part})` }));
        x += w;
      }
      if (slow.has(rank.rank)) g.append(svg("rect", { x: L, y: y - 1, width: ((rank.step_ns || 0) / top) * (W - L - 20), height: 22, fill: "none", stroke: "var(--bad)", "stroke-width": 2 }));
      titled(g, `rank ${rank.rank}: step ${dur(rank.step_ns)}\n` + parts.map(([k, p]) => `${p} ${dur(rank[k])}`).join("\n"));
      chart.append(g);
    });
    sec.append(el("div", { class: "legend" }, ...parts.map(([, p]) => el("span", {}, el("i", { style: `background: var(--${p})` }), p === "communication" ? "communication not overlapped" : p))), chart);
    for (const st of r.stragglers || []) {
      sec.append(el("p", {}, el("strong", { text: `Rank ${st.rank} is the straggler: ` }), `${st.reason}; the line: ${st.line}${st.op ? " (" + st.op + ")" : ""}, ${dur(st.line_excess_ns)} per step over the other ranks`));
    }
    table(sec, [
      { key: "rank", label: "rank" }, { key: "device", label: "device", text: true }, { key: "steps", label: "steps" },
      { key: "step_ns", label: "step", fmt: dur }, { key: "compute_ns", label: "compute", fmt: dur },
      { key: "communication_ns", label: "communication", fmt: dur }, { key: "exposed_ns", label: "not overlapped", fmt: dur },
      { key: "idle_ns", label: "idle", fmt: dur }, { key: "overlap", label: "overlap", fmt: (v) => pct(v) },
      { key: "clock_shift_ns", label: "clock shift", fmt: dur },
    ], r.ranks);
    // who arrived last at each process group's collectives: a row per rank of the group
    for (const g of r.arrivals || []) {
      sec.append(el("h3", { text: `Who arrived last: group ${g.group}${g.description ? " (" + g.description + ")" : ""}, ${num(g.compared)} collectives compared` }));
      table(sec, [
        { key: "rank", label: "rank" }, { key: "last_share", label: "arrived last", fmt: (v) => pct(v) },
        { key: "mean_wait_ns", label: "waited for the last (mean)", fmt: dur },
      ], g.ranks, { sort: "last_share" });
    }
    // where each rank's mean steady step went (analyses/step_time.py), the parts any rank has
    const shown = STEP_PARTS.filter(([key]) => r.ranks.some((x) => (x.parts || {})[key] > 0));
    if (shown.length) {
      sec.append(el("h3", { text: "Where each rank's step went" }));
      sec.append(el("p", { class: "note", text: "The mean steady step of each rank, in parts that add up to it (see the step section of a single rank's page)." }));
      // a part a rank has no number for (the profiler's own work, not measured there) reads so, never 0
      const rows = r.ranks.map((x) => ({ rank: x.rank, ...Object.fromEntries(shown.map(([key]) => [key, (x.parts || {})[key] ?? null])) }));
      const measured = (v) => (v === null ? "not measured" : dur(v));
      table(sec, [{ key: "rank", label: "rank" }, ...shown.map(([key]) => ({ key, label: key.replace("_", " "), fmt: measured }))], rows);
    }
  }

  const drawn = new Set(["schema_version", "title", "profile", "findings", "not_judged", "summary", "step_time", "steps", "calltree", "tallies",
    "memory_timeline", "memory", "drawings", "tensor_stall_cost", "access_patterns", "counters", "stalls", "diff", "ranks", "perf_model"]);
  function drawOthers() {
    for (const [key, value] of Object.entries(data)) {
      if (drawn.has(key) || value === null || (Array.isArray(value) && !value.length)) continue;
      const sec = section(key, key.replace(/_/g, " "));
      const text = asJson(value);
      sec.append(el("pre", { text: text.length > 20000 ? text.slice(0, 20000) + "\n…" : text }));
    }
  }

  for (const draw of [drawDiff, drawRanks, drawFindings, drawSummary, drawStepTime, drawSteps, drawTree, drawTallies, drawMemory, drawForests, drawStallCost,
    drawAccessPatterns, drawPerfModel, drawCounters, drawStalls, drawOthers]) {
    try { draw(); } catch (err) { console.error(`tenprof page: ${draw.name} failed:`, err); }
  }
  // The bar of links sticks to the top and wraps to more lines on a narrow window: its height, kept in
  // --toc-height, is how far below the top a linked section lands (scroll-margin-top) and where the
  // tables' headers stick, so neither hides under it.
  const tocHeight = () => document.documentElement.style.setProperty("--toc-height", toc.getBoundingClientRect().height + "px");
  tocHeight();
  new ResizeObserver(tocHeight).observe(toc);
  document.body.dataset.ready = "1";
})();
