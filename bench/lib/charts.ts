/**
 * A scaling chart as a standalone SVG: three panels side by side (server CPU per operation, p99
 * latency, resident memory) against the varied figure on a log scale, one point per variant.
 */
import type { RunResult } from './measure.ts';

const W = 300;
const H = 220;
const PAD = { left: 52, right: 30, top: 34, bottom: 44 };

interface Series {
  title: string;
  unit: string;
  value: (r: RunResult) => number | null;
}

const SERIES: Series[] = [
  { title: 'server CPU per request', unit: 'µs', value: (r) => r.figures.cpuPerOpUs },
  { title: 'p99 latency', unit: 'ms', value: (r) => r.figures.p99 },
  { title: 'resident memory', unit: 'MiB', value: (r) => r.figures.rssMb },
];

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
/** 1,000,002 → 1M, 33,334 → 33k: the axis names the scale, not the exact count. */
const short = (n: number): string => (n >= 1e6 ? `${Number((n / 1e6).toPrecision(2))}M` : n >= 1e3 ? `${Number((n / 1e3).toPrecision(2))}k` : String(n));
const fmt = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

function panel(s: Series, xs: number[], ys: number[], ox: number): string {
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const [lx0, lx1] = [Math.log10(Math.min(...xs)), Math.log10(Math.max(...xs))];
  const yMax = Math.max(...ys.filter(Number.isFinite), 1e-9) * 1.3;
  const px = (x: number): number => ox + PAD.left + (lx1 === lx0 ? innerW / 2 : ((Math.log10(x) - lx0) / (lx1 - lx0)) * innerW);
  const py = (y: number): number => PAD.top + innerH - (y / yMax) * innerH;
  const points = xs.map((x, i) => [px(x), py(ys[i] ?? NaN)] as const).filter(([, y]) => Number.isFinite(y));
  const out = [
    `<text x="${ox + W / 2}" y="20" text-anchor="middle" font-size="13" font-weight="bold">${esc(s.title)} (${s.unit})</text>`,
    `<line x1="${ox + PAD.left}" y1="${PAD.top + innerH}" x2="${ox + W - PAD.right}" y2="${PAD.top + innerH}" stroke="#333"/>`,
    `<line x1="${ox + PAD.left}" y1="${PAD.top}" x2="${ox + PAD.left}" y2="${PAD.top + innerH}" stroke="#333"/>`,
  ];
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + innerH - f * innerH;
    out.push(`<line x1="${ox + PAD.left}" y1="${y}" x2="${ox + W - PAD.right}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${ox + PAD.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${fmt(f * yMax)}</text>`);
  }
  for (const x of xs) out.push(`<text x="${px(x)}" y="${PAD.top + innerH + 16}" text-anchor="middle" font-size="11">${short(x)}</text>`);
  if (points.length > 1)
    out.push(`<polyline fill="none" stroke="#1f6fb2" stroke-width="2" points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`);
  for (const [x, y] of points) out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="#1f6fb2"/>`);
  points.forEach(([x, y], i) =>
    out.push(`<text x="${x.toFixed(1)}" y="${(y - 8).toFixed(1)}" text-anchor="middle" font-size="10" fill="#1f6fb2">${fmt(ys[i] ?? NaN)}</text>`),
  );
  return out.join('\n');
}

export function chart(scenario: string, x: 'memberships' | 'connections', runs: RunResult[]): string {
  const sortedRuns = [...runs].sort((a, b) => a[x] - b[x]);
  const xs = sortedRuns.map((r) => r[x]);
  const width = W * SERIES.length;
  const body = SERIES.map((s, i) =>
    panel(
      s,
      xs,
      sortedRuns.map((r) => s.value(r) ?? NaN),
      i * W,
    ),
  ).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 24}" viewBox="0 0 ${width} ${H + 24}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    body,
    `<text x="${width / 2}" y="${H + 14}" text-anchor="middle" font-size="12">${esc(`${scenario}: against ${x} (log scale), median of the rounds`)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
