// The overview: deliveries, success ratio, failures, retry lateness and
// the pending backlog over the last hour or day (GET /v1/stats, columns
// ready for uPlot), and the endpoints failing most. Refreshes itself.

import uPlot from './vendor/uplot.mjs';
import { html, useState, useEffect, useRef, useLoad, ErrorNote, Loading, Empty } from './ui.js';
import { get, query } from './api.js';
import { EndpointName } from './names.js';

const REFRESH_MS = 5000;

// The time axis's labels: UTC, 24-hour, as the page says ("Times in
// UTC"), whatever the browser's zone; the date too where the ticks
// cross midnight. uPlot's default is the browser's local 12-hour time.
export function utcTicks(ticks) {
  const days = new Set(ticks.map((t) => new Date(t * 1000).toISOString().slice(0, 10)));
  return ticks.map((t) => {
    const iso = new Date(t * 1000).toISOString();
    return days.size > 1 && iso.slice(11, 16) === '00:00' ? iso.slice(5, 10) : iso.slice(11, 16);
  });
}

// A moment in the legend under the cursor: UTC, 24-hour, as the axis
// (uPlot's default legend is the browser's local 12-hour time).
export function utcMoment(t) {
  if (t == null) return '';
  return `${new Date(t * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

// A value axis's labels, short enough for the axis: 1200 ms as "1.2 s",
// 25000 as "25k".
export function valueTicks(ticks, unit = '') {
  return ticks.map((v) => {
    if (unit === 'ms' && Math.abs(v) >= 1000) return `${+(v / 1000).toFixed(1)} s`;
    if (unit !== '%' && Math.abs(v) >= 10000) return `${+(v / 1000).toFixed(1)}k${unit && ` ${unit}`}`;
    return `${+v.toFixed(3)}${unit && (unit === '%' ? unit : ` ${unit}`)}`;
  });
}

// Each value is drawn as a point too: a value alone between gaps (the
// current minute's, say) has no line to show it.
function Chart({ title, test, time, series, unit, empty, zeroIsValue = false }) {
  const box = useRef(null);
  const plot = useRef(null);
  const data = [time, ...series.map((s) => s.values)];
  useEffect(() => {
    const width = Math.max(240, box.current.clientWidth);
    // Axes and lines in the page's colours (dark mode's too; each
    // series names its variable), read as drawn.
    const css = getComputedStyle(document.documentElement);
    const ink = css.getPropertyValue('--muted').trim();
    const line = css.getPropertyValue('--line').trim();
    const axis = { stroke: ink, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    plot.current = new uPlot({
      width,
      height: 180,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      // A share is drawn from 0 to 100 %, not to a rounded 200 %.
      scales: unit === '%' ? { x: { time: true }, y: { range: [0, 100] } } : { x: { time: true } },
      axes: [
        { ...axis, values: (u, ticks) => utcTicks(ticks) },
        { ...axis, values: (u, ticks) => valueTicks(ticks, unit), size: 64 },
      ],
      series: [{ label: 'Time', value: (u, t) => utcMoment(t) }, ...series.map((s) => ({ label: s.label, stroke: css.getPropertyValue(s.color).trim(), width: 2, spanGaps: false, points: { show: true, size: 4 } }))],
    }, data, box.current);
    const resized = new ResizeObserver(() => {
      if (plot.current && box.current) plot.current.setSize({ width: Math.max(240, box.current.clientWidth), height: 180 });
    });
    resized.observe(box.current);
    return () => {
      resized.disconnect();
      plot.current.destroy();
      plot.current = null;
    };
  }, [series.length]);
  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  });
  // Nothing to draw says why, rather than an empty frame.
  // (A share of 0 % is something: every attempt failed.)
  const nothing = series.every((s) => s.values.every((v) => v === null || (v === 0 && !zeroIsValue)));
  return html`<figure class="chart" data-test=${test}>
    <figcaption>${title}</figcaption>
    <div ref=${box} class="plot" role="img" aria-label=${title}></div>
    ${nothing && html`<p class="muted chart-empty" data-test=${`${test}-empty`}>${empty || 'Nothing in this window.'}</p>`}
  </figure>`;
}

const per = (values, seconds) => values.map((v) => (v === null ? null : Math.round((v / seconds) * 1000) / 1000));
const percent = (values) => values.map((v) => (v === null ? null : Math.round(v * 1000) / 10));

// The window's charts. The pending backlog is sampled for the whole
// deployment only: a view of one endpoint, or a portal's of its own
// (`filtered`), leaves it out.
function Charts({ s, filtered = false }) {
  const step = s.step_seconds;
  return html`
      <div class="charts">
        <${Chart} title="Deliveries per second" test="chart-deliveries" time=${s.time} series=${[
          { label: 'delivered/s', values: per(s.delivered, step), color: '--ok' },
          { label: 'attempts/s', values: per(s.attempts, step), color: '--accent' },
        ]} />
        <${Chart} title="Success ratio of attempts" test="chart-success" unit="%" zeroIsValue=${true} time=${s.time}
          empty="No attempt in this window." series=${[
          { label: 'success %', values: percent(s.success_ratio), color: '--ok' },
        ]} />
        <${Chart} title="Failures" test="chart-failures" time=${s.time}
          empty="Nothing failed in this window." series=${[
          { label: 'failed notifications', values: s.failed, color: '--bad' },
          { label: 'failed attempts', values: s.failed_attempts, color: '--warn' },
        ]} />
        <${Chart} title="Retry lateness p99" test="chart-lateness" unit="ms" time=${s.time}
          empty="No attempt started late in this window." series=${[
          { label: 'p99 ms', values: s.lateness_p99_ms, color: '--wait' },
        ]} />
        ${s.pending.some((v) => v !== null) || !filtered ? html`<${Chart} title="Pending backlog" test="chart-pending" time=${s.time}
          empty="Nothing pending in this window, or not sampled yet (once a minute)." series=${[
          { label: 'pending', values: s.pending, color: '--accent' },
        ]} />` : null}
      </div>`;
}

function Totals({ totals }) {
  const ratio = totals.success_ratio === null ? '—' : `${(totals.success_ratio * 100).toFixed(1)} %`;
  return html`<dl class="totals" data-test="totals">
    <div><dt>Delivered</dt><dd data-test="total-delivered">${totals.delivered}</dd></div>
    <div><dt>Failed</dt><dd data-test="total-failed">${totals.failed}</dd></div>
    <div><dt>Attempts</dt><dd data-test="total-attempts">${totals.attempts}</dd></div>
    <div><dt>Failed attempts</dt><dd>${totals.failed_attempts}</dd></div>
    <div><dt>Success ratio</dt><dd data-test="total-success">${ratio}</dd></div>
  </dl>`;
}

function FailingEndpoints({ rows }) {
  if (!rows.length) return html`<${Empty}>No endpoint failed in this window.<//>`;
  return html`<div class="scroll"><table data-test="failing-endpoints">
    <thead><tr><th scope="col">Endpoint</th><th scope="col">URL</th><th scope="col">Failed attempts</th><th scope="col">Attempts</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr key=${r.endpoint_id}>
      <td data-test="failing-endpoint"><${EndpointName} id=${r.endpoint_id} /></td>
      <td class="url">${r.url || '(pull)'}</td>
      <td>${r.failed_attempts}</td><td>${r.attempts}</td></tr>`)}
    </tbody></table></div>`;
}

// One endpoint's totals and charts over the last hour or 24 hours, on its
// page (docs/design.md §18), from the same per-minute counts.
export function EndpointCharts({ id }) {
  const [window, setWindow] = useState('1h');
  const stats = useLoad(() => get(`/v1/stats${query({ window, endpoint: id })}`), `${id} ${window}`, REFRESH_MS);
  const s = stats.data;
  return html`<section data-test="endpoint-charts" aria-label="Deliveries">
    <div class="heading"><h2>Deliveries</h2><${WindowToggle} window=${window} choose=${setWindow} /></div>
    <p class="muted">Times in UTC.</p>
    ${s ? html`<${Totals} totals=${s.totals} /><${Charts} s=${s} filtered=${true} />`
      : stats.error ? html`<${ErrorNote} error=${stats.error} />` : html`<${Loading} what="its statistics" />`}
  </section>`;
}

function WindowToggle({ window, choose }) {
  const button = (w) => html`<button type="button" aria-pressed=${window === w} data-test=${`window-${w}`}
    onClick=${() => choose(w)}>${w === '1h' ? 'Last hour' : 'Last 24 hours'}</button>`;
  return html`<div class="toggle" role="group" aria-label="Window">${button('1h')}${button('24h')}</div>`;
}

export function Overview({ who, params }) {
  const [window, setWindow] = useState(params.get('window') === '24h' ? '24h' : '1h');
  const stats = useLoad(() => get(`/v1/stats${query({ window })}`), window, REFRESH_MS);
  const s = stats.data;
  let body;
  if (!s && stats.error && stats.error.status === 404) {
    body = html`<p class="notice" data-test="stats-missing">This hookd does not serve statistics (GET /v1/stats) yet.</p>`;
  } else if (!s) {
    body = stats.error ? html`<${ErrorNote} error=${stats.error} />` : html`<${Loading} what="statistics" />`;
  } else {
    body = html`
      <${Totals} totals=${s.totals} />
      <${Charts} s=${s} filtered=${Boolean(who && who.portal)} />
      <h2>Endpoints failing most</h2>
      <${FailingEndpoints} rows=${s.failing_endpoints} />
      ${stats.error && html`<${ErrorNote} error=${stats.error} />`}`;
  }
  return html`<section data-test="overview">
    <div class="heading"><h1>Overview</h1>
      <${WindowToggle} window=${window} choose=${setWindow} /></div>
    <p class="muted">Refreshes every ${REFRESH_MS / 1000} seconds. Times in UTC.</p>
    ${body}
  </section>`;
}
