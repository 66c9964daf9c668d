// cua-rollout dashboard: every page renders the JSON the producer embedded in it, then keeps itself up to date
// from /v1/dashboard/stream (server-sent events pushed when the producer's sampler sees a change). Plots: uPlot
// (vendored in vendor/uplot, see its VERSION). No build step, no other dependency.
'use strict';
const cua = {plots: {}};
window.cuaPlots = cua.plots;  // the browser tests read the plotted data here

const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
const pct = (v) => (v === null || v === undefined) ? '-' : `${(100 * v).toFixed(1)}%`;
const num = (v, digits = 0) => (v === null || v === undefined) ? '-' : Number(v).toFixed(digits);
const $ = (id) => document.getElementById(id);
const counts = (obj) => Object.entries(obj || {}).map(([k, n]) => `${esc(k)} ${n}`).join(' ');
const initial = () => { const el = $('initial'); return el ? JSON.parse(el.textContent) : {}; };

// One plot per element id: created on first data, then only its data is replaced (uPlot setData).
function plot(id, series, data, extra = {}) {
  const el = $(id);
  if (!el) return;
  if (cua.plots[id]) { cua.plots[id].setData(data); return; }
  const width = Math.max(300, el.clientWidth || el.parentElement.clientWidth - 16);
  const opts = Object.assign({width, height: 220, series: [{}, ...series], legend: {live: false},
                              cursor: {drag: {x: false, y: false}}}, extra);
  cua.plots[id] = new uPlot(opts, data, el);
}

// Whiskers of intervals drawn over a bar or line series (uPlot draw hook): lows/highs in the y scale.
function whiskers(lows, highs) {
  return (u) => {
    const ctx = u.ctx; ctx.save(); ctx.strokeStyle = '#111'; ctx.lineWidth = 2 * devicePixelRatio;
    u.data[0].forEach((x, i) => {
      if (lows()[i] === null || lows()[i] === undefined) return;
      const cx = u.valToPos(x, 'x', true), y1 = u.valToPos(lows()[i], 'y', true), y2 = u.valToPos(highs()[i], 'y', true);
      const w = 6 * devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(cx, y1); ctx.lineTo(cx, y2); ctx.moveTo(cx - w, y1); ctx.lineTo(cx + w, y1);
      ctx.moveTo(cx - w, y2); ctx.lineTo(cx + w, y2); ctx.stroke();
    });
    ctx.restore();
  };
}

// Bars of named categories (x = 0..n-1) with optional interval whiskers.
function bars(id, label, names, values, color, lows = null, highs = null, yRange = null) {
  const state = cua[id] = cua[id] || {};
  state.names = names; state.lows = lows; state.highs = highs;
  const data = [names.map((_, i) => i), values];
  plot(id, [{label, fill: color, stroke: color, paths: uPlot.paths.bars({size: [0.6, 80]}), points: {show: false}}], data, {
    scales: {x: {time: false, range: () => [-0.5, Math.max(0.5, state.names.length - 0.5)]}, ...(yRange ? {y: {range: yRange}} : {})},
    axes: [{size: 40, splits: () => state.names.map((_, i) => i), values: (u, vals) => vals.map((v) => state.names[v] ?? '')}, {}],
    hooks: lows ? {draw: [whiskers(() => state.lows || [], () => state.highs || [])]} : {},
  });
}

// Server-sent events: handlers by event name; the status line in the nav says whether the page is live.
function connect(runId, handlers) {
  const status = $('live-status');
  const es = new EventSource('/v1/dashboard/stream' + (runId ? `?run_id=${encodeURIComponent(runId)}` : ''));
  es.onopen = () => { status.textContent = '● live'; status.className = 'live'; };
  es.onerror = () => { status.textContent = '● reconnecting…'; status.className = 'down'; };
  for (const [event, handler] of Object.entries(handlers)) {
    es.addEventListener(event, (e) => { handler(JSON.parse(e.data)); cua.updates = (cua.updates || 0) + 1; });
  }
  es.addEventListener('error', (e) => { if (e.data) { status.textContent = e.data; es.close(); } });
  return es;
}

// ---- overview ------------------------------------------------------------------------------------------
function runRow(run) {
  const state = run.finished ? 'finished' : (run.cancelled ? 'cancelled' : 'running');
  return `<tr><td><a href="/ui/runs/${esc(run.run_id)}">${esc(run.run_id)}</a></td>
    <td><progress max="${run.total}" value="${run.done}"></progress> ${run.done}/${run.total}</td>
    <td>${pct(run.score)} (${num(run.total_reward, 1)}/${run.score_n})</td>
    <td class="${run.infra_failures ? 'bad' : ''}">${run.infra_failures}</td><td>${pct(run.success_rate)}</td>
    <td class="${state === 'running' ? 'running' : ''}">${state}</td></tr>`;
}

function renderOverview(s) {
  if (!s) return;
  const depth = s.queues.reduce((a, q) => a + q.depth, 0);
  const inflight = s.replicas.reduce((a, r) => a + (r.in_flight || 0), 0);
  $('cards').innerHTML = [[s.steps_per_s.toFixed(2), 'steps / s (last 30 s)'], [s.envs.leased, 'envs leased'],
    [s.envs.idle, 'envs idle'], [s.envs.unhealthy, 'envs unhealthy'], [depth, 'rollouts waiting'],
    [inflight, 'model requests in flight'], [s.runs.filter((r) => !r.finished).length, 'runs running']]
    .map(([v, label]) => `<div class="card"><b>${esc(v)}</b><span>${esc(label)}</span></div>`).join('')
    + (s.error ? `<p class="bad">${esc(s.error)}</p>` : '');
  $('runs').innerHTML = '<tr><th>run</th><th>progress</th><th>score</th><th>infra failures</th><th>success (of rewarded)</th><th>status</th></tr>'
    + (s.runs.map(runRow).join('') || '<tr><td colspan="6" class="muted">no runs yet</td></tr>');
  $('queues').innerHTML = '<tr><th>queue</th><th>depth</th><th>started</th><th>failed</th><th>workers</th></tr>'
    + s.queues.map((q) => `<tr><td>${esc(q.queue)}</td><td>${q.depth}</td><td>${q.started}</td><td class="${q.failed ? 'bad' : ''}">${q.failed}</td><td>${q.workers}</td></tr>`).join('');
  $('envs').innerHTML = `${s.envs.total} envs: ${s.envs.leased} leased, ${s.envs.idle} idle, <span class="${s.envs.unhealthy ? 'bad' : ''}">${s.envs.unhealthy} unhealthy</span> · <a href="/ui/wall">the wall</a>`;
  $('replicas-box').innerHTML = s.replicas_error ? `<p class="muted">${esc(s.replicas_error)}</p>`
    : '<table id="replicas"><tr><th>replica</th><th>url</th><th>healthy</th><th>in flight</th><th>model version</th></tr>'
      + s.replicas.map((r) => `<tr><td>${esc(r.id)}</td><td>${esc(r.url)}</td><td>${esc(r.healthy)}</td><td>${r.in_flight}</td><td>${esc(r.model_version)}</td></tr>`).join('') + '</table>';
}

function renderSeries(series) {
  if (!series || !series.values || !series.t) return;
  $('series-source').textContent = `(from ${series.source}${series.error ? ': ' + series.error : ''}, ${series.t.length} points)`;
  const v = series.values, t = series.t;
  plot('plot-queue', [{label: 'waiting', stroke: '#1565c0', width: 2}], [t, v.queue_depth || []]);
  plot('plot-envs', [{label: 'leased', stroke: '#d84315', width: 2}, {label: 'idle', stroke: '#2e7d32', width: 2}],
       [t, v.envs_leased || [], v.envs_idle || []]);
  plot('plot-inflight', [{label: 'in flight', stroke: '#6a1b9a', width: 2}], [t, v.in_flight || []]);
  plot('plot-steps', [{label: 'steps/s', stroke: '#00838f', width: 2}], [t, v.steps_per_s || []]);
}

// ---- wall ----------------------------------------------------------------------------------------------
function tileHtml(tile) {
  const live = tile.live;
  if (!live) return `<div class="tile" data-env="${esc(tile.env_id)}"><div class="noshot muted">leased${tile.rollout_id ? ' by ' + esc(tile.rollout_id) : ''}, no step yet</div><div class="caption">env ${esc(tile.env_id)}</div></div>`;
  const shot = live.shot ? `<img alt="latest screenshot of ${esc(live.trajectory)}" src="/v1/dashboard/rollouts/${encodeURIComponent(live.rollout_id)}/shot?step=${live.step}">`
    : '<div class="noshot muted">no screenshot yet</div>';
  return `<a class="tile" data-env="${esc(tile.env_id)}" data-rollout="${esc(live.rollout_id)}" data-step="${live.step ?? ''}" href="/ui/trajectories/${esc(live.trajectory)}">${shot}
    <div class="caption"><span class="task">${esc(live.task_id)}</span> #${live.rollout_index} · step <b class="step-no">${live.step ?? '-'}</b>
    · ${live.step_ms !== null && live.step_ms !== undefined ? (live.step_ms / 1000).toFixed(1) + ' s' : '-'}
    · policy ${esc(live.policy_version || '-')}<br><code class="last-action">${esc(live.action || '(no action yet)')}</code>
    ${live.texts.map((t) => `<br><code class="typed">${esc(t)}</code>`).join('')}
    <br><span class="muted">env ${esc(tile.env_id)} · run ${esc(live.run_id)}</span></div></a>`;
}

function renderWall(s) {
  if (!s) return;
  const wall = $('wall');
  $('wall-count').textContent = `(${s.wall.length} leased of ${s.envs.total} envs · ${s.steps_per_s.toFixed(2)} steps/s)`;
  const seen = new Set();
  for (const tile of s.wall) {
    seen.add(tile.env_id);
    const key = `${tile.rollout_id}|${tile.live ? tile.live.step : ''}|${tile.live ? tile.live.shot : ''}`;
    let el = wall.querySelector(`[data-env="${CSS.escape(tile.env_id)}"]`);
    if (el && el.dataset.key === key) continue;  // unchanged: keep the loaded image
    const fresh = document.createElement('div'); fresh.innerHTML = tileHtml(tile);
    const node = fresh.firstElementChild; node.dataset.key = key;
    if (el) el.replaceWith(node); else wall.appendChild(node);
  }
  for (const el of [...wall.children]) if (!seen.has(el.dataset.env)) el.remove();
  if (!s.wall.length && !wall.querySelector('.empty')) wall.innerHTML = '<p class="muted empty">no env is leased now</p>';
  if (s.wall.length) wall.querySelector('.empty')?.remove();
}

// ---- run page ------------------------------------------------------------------------------------------
function scoreRow(name, s, head = false) {
  const c = head ? 'th' : 'td';
  return `<tr><${c}>${esc(name)}</${c}><${c}>${num(s.total_reward, 2)}/${s.n}</${c}><${c}>${pct(s.score)}</${c}>
    <${c} class="${Object.keys(s.zero).length ? 'bad' : ''}">${counts(s.zero)}</${c}><${c} class="muted">${counts(s.excluded)}${s.pending ? ' pending ' + s.pending : ''}</${c}></tr>`;
}

function renderRun(d) {
  const run = d.summary, st = d.stats;
  $('progress').innerHTML = `<progress max="${run.total}" value="${run.done}"></progress> <b id="done-count">${run.done}/${run.total}</b> done · `
    + `<span class="${run.finished ? '' : 'running'}">${run.finished ? 'finished' : (run.cancelled ? 'cancelled' : 'running')}</span> · ${counts(run.counts)}`;
  plot('plot-completed', [{label: 'finished', stroke: '#1565c0', width: 2}], [d.curve.t, d.curve.completed]);
  plot('plot-rate', [{label: 'rate', stroke: '#2e7d32', width: 2}, {label: 'low', stroke: '#a5d6a7'}, {label: 'high', stroke: '#a5d6a7'}],
       [d.curve.t, d.curve.rate, d.curve.low, d.curve.high],
       {bands: [{series: [3, 2], fill: 'rgba(46,125,50,0.15)'}], scales: {y: {range: [0, 1]}}});
  const domains = Object.keys(st.domains);
  bars('plot-domains', 'success rate', domains, domains.map((k) => st.domains[k].rate), '#64b5f6',
       domains.map((k) => st.domains[k].low), domains.map((k) => st.domains[k].high), [0, 1]);
  $('score').innerHTML = '<tr><th>domain</th><th>reward</th><th>score</th><th>counted 0 (no reward)</th><th>left out</th></tr>'
    + Object.entries(st.domain_scores).map(([k, s]) => scoreRow(k, s)).join('') + scoreRow('all', st.score, true);
  const rateRow = (k, r, c = 'td') => `<tr><${c}>${esc(k)}</${c}><${c}>${r.successes}/${r.n}</${c}><${c}>${pct(r.rate)}</${c}><${c}>[${pct(r.low)}, ${pct(r.high)}]</${c}></tr>`;
  $('domains').innerHTML = '<tr><th>domain</th><th>solved</th><th>rate</th><th>interval</th></tr>'
    + Object.entries(st.domains).map(([k, r]) => rateRow(k, r)).join('') + rateRow('all', st.overall, 'th');
  $('pass-at-k').innerHTML = '<tr>' + Object.keys(st.pass_at_k).map((k) => `<th>pass@${k}</th>`).join('') + '</tr><tr>'
    + Object.values(st.pass_at_k).map((v) => `<td>${pct(v)}</td>`).join('') + '</tr>';
  $('infra').textContent = `infrastructure failures: ${st.infra_failures}`;
  const reward = (r) => r === null || r === undefined ? '-' : `<span class="${r >= 1 ? 'reward-1' : 'reward-0'}">${r}</span>`;
  $('groups').innerHTML = '<tr><th>task</th><th>rollouts: reward (steps)</th><th>solved</th></tr>'
    + Object.entries(d.groups).map(([task, g]) => `<tr><td><a href="/ui/runs/${esc(run.run_id)}/group?task=${encodeURIComponent(task)}">${esc(task)}</a></td>
      <td>${g.map((r) => `${reward(r.reward)} (${r.num_steps})`).join(' · ')}</td><td>${g.filter((r) => r.reward >= 1).length}/${g.length}</td></tr>`).join('');
  $('rollouts').innerHTML = '<tr><th>task</th><th>#</th><th>domain</th><th>status</th><th>reward</th><th>steps</th><th>error</th></tr>'
    + d.rollouts.map((r) => `<tr><td>${r.trajectory ? `<a href="/ui/trajectories/${esc(r.trajectory)}">${esc(r.task_id)}</a>` : esc(r.task_id)}</td>
      <td>${r.rollout_index}</td><td>${esc(r.domain)}</td><td>${esc(r.status)}</td>
      <td class="${r.reward !== null && r.reward >= 1 ? 'good' : 'bad'}">${r.reward ?? '-'}</td><td>${r.num_steps}</td>
      <td class="muted">${esc((r.error || '').slice(0, 160))}</td></tr>`).join('')
    + (d.rollouts_total > d.rollouts.length ? `<tr><td colspan="7" class="muted">${d.rollouts_total - d.rollouts.length} more not listed</td></tr>` : '');
}

// ---- a task's group (GRPO view) ------------------------------------------------------------------------
function renderGroup(d, task) {
  const group = d.groups[task] || [];
  const names = group.map((r) => `#${r.rollout_index}`);
  bars('plot-group', 'reward', names, group.map((r) => r.reward), '#81c784', null, null, [0, 1]);
  $('group').innerHTML = group.map((r) => {
    const last = r.num_steps > 0 && r.trajectory ? `<img alt="final screen of ${esc(r.trajectory)}" src="/v1/trajectories/${esc(r.trajectory)}/image_${String(r.num_steps - 1).padStart(4, '0')}.png">` : '<div class="noshot muted">no screenshot</div>';
    return `<a class="tile" href="${r.trajectory ? '/ui/trajectories/' + esc(r.trajectory) : '#'}">${last}<div class="caption">
      <span class="task">#${r.rollout_index}</span> · reward <b class="${r.reward >= 1 ? 'reward-1' : 'reward-0'}">${r.reward ?? '-'}</b>
      · <b>${r.num_steps}</b> steps · ${esc(r.status)}${r.duration_ms ? ' · ' + (r.duration_ms / 1000).toFixed(1) + ' s' : ''}</div></a>`;
  }).join('');
}

// ---- start ---------------------------------------------------------------------------------------------
document.addEventListener('DOMContentLoaded', () => {
  const page = document.body.dataset.page, data = initial();
  if (page === 'overview') {
    renderOverview(data.snapshot); renderSeries(data.series);
    connect(null, {snapshot: renderOverview, series: renderSeries});
  } else if (page === 'wall') {
    renderWall(data.snapshot); connect(null, {snapshot: renderWall});
  } else if (page === 'run') {
    renderRun(data.run); connect(data.run.summary.run_id, {run: renderRun});
  } else if (page === 'group') {
    const task = JSON.parse($('task-id').textContent);
    renderGroup(data.run, task); connect(data.run.summary.run_id, {run: (d) => renderGroup(d, task)});
  }  // the trajectory page: trajectory.js
});
