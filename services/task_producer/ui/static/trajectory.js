// The trajectory page: markers on each screenshot's pixel grid, timing bars, Prev/Next (buttons, ← → or k j),
// and, while the rollout runs, the steps the sink stores appended as they arrive (polled from the store
// through /ui/trajectories/.../steps, never from Redis).
'use strict';
(() => {
  const box = document.getElementById('steps');
  const maxMs = () => Math.max(1, ...[...box.querySelectorAll('.timebar')].map((b) => Number(b.dataset.stepMs) || 0));
  let current = -1;

  // Size each overlay to its screenshot's pixel grid, so markers sit at the real screen coordinates.
  function fit(section) {
    const img = section.querySelector('.shot img');
    if (!img) return;
    const set = () => img.nextElementSibling.setAttribute('viewBox', `0 0 ${img.naturalWidth} ${img.naturalHeight}`);
    if (img.complete && img.naturalWidth) set(); else img.addEventListener('load', set);
  }
  // Each step's time bar: its parts (model, action, screenshot, settle) as widths of the slowest step's time.
  function bars() {
    const scale = maxMs();
    for (const bar of box.querySelectorAll('.timebar')) {
      for (const part of bar.children) part.style.width = `${100 * (Number(part.dataset.ms) || 0) / scale}%`;
    }
  }
  function select(index) {
    const steps = [...box.querySelectorAll('.step')];
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, index));
    steps.forEach((s, i) => s.classList.toggle('current', i === current));
    steps[current].scrollIntoView({block: 'start'});
    document.getElementById('position').textContent = `step ${steps[current].dataset.step} (${current + 1} of ${steps.length})`;
    history.replaceState(null, '', `#${steps[current].id}`);
  }
  document.getElementById('prev').addEventListener('click', () => select(current - 1));
  document.getElementById('next').addEventListener('click', () => select(current + 1));
  document.addEventListener('keydown', (e) => {
    if (e.target.closest('input, textarea') || e.metaKey || e.ctrlKey || e.altKey) return;
    if (e.key === 'ArrowRight' || e.key === 'j') { select(current + 1); e.preventDefault(); }
    if (e.key === 'ArrowLeft' || e.key === 'k') { select(current - 1); e.preventDefault(); }
  });
  box.querySelectorAll('.step').forEach(fit);
  bars();
  const fromHash = [...box.querySelectorAll('.step')].findIndex((s) => `#${s.id}` === location.hash);
  if (fromHash >= 0) select(fromHash);
  else document.getElementById('position').textContent = `${box.querySelectorAll('.step').length} steps`;

  // Live: poll the stored steps after the last one shown until the manifest is stored, then show the outcome.
  const status = document.getElementById('live-status');
  if (box.dataset.live !== 'true') { status.textContent = ''; return; }
  status.textContent = '● live: following the rollout'; status.className = 'live';
  const poll = async () => {
    try {
      const r = await fetch(`/ui/trajectories/${box.dataset.trajectory}/steps?after=${box.dataset.last}`);
      if (r.ok) {
        const body = await r.json();
        if (body.html) {
          const follow = current === -1 || current === box.querySelectorAll('.step').length - 1;
          box.insertAdjacentHTML('beforeend', body.html);
          box.dataset.last = body.last;
          box.querySelectorAll('.step').forEach(fit); bars();
          if (follow && current !== -1) select(box.querySelectorAll('.step').length - 1);
          document.getElementById('position').textContent ||= '';
        }
        if (body.ended) {
          status.textContent = '● ended'; status.className = '';
          const page = await fetch(location.pathname);  // the outcome, reward and evaluation inputs
          const doc = new DOMParser().parseFromString(await page.text(), 'text/html');
          for (const id of ['outcome']) document.getElementById(id).replaceWith(doc.getElementById(id));
          const evaluation = doc.getElementById('evaluation') || doc.getElementById('evaluation-none');
          const mine = document.getElementById('evaluation') || document.getElementById('evaluation-none');
          if (evaluation && mine) mine.replaceWith(evaluation);
          box.dataset.live = 'false';
          return;
        }
      }
    } catch (err) { status.textContent = '● reconnecting…'; status.className = 'down'; }
    setTimeout(poll, 1500);
  };
  setTimeout(poll, 1500);
})();
