// A workflow's steps as an SVG built by code, laid out top to bottom so that a long chain grows
// downwards and a phone only has to fit the widest layer. Colours are CSS classes, never inline
// styles: the CSP has no 'unsafe-inline'.
import type { WorkflowRunStep, WorkflowStep } from '../../../../protocol/workflow-views.js';
import { layers, type LayoutStep } from '../../../../protocol/workflow-layout.js';

const W = 150;
const H = 50;
const GX = 18;
const GY = 40;
const PAD = 6;
const LEGEND = ['PENDING', 'READY', 'ACTIVE', 'WAITING_SIGNAL', 'IN_REVIEW', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];

export interface GraphProps {
  /** The version's steps (their `after` edges), or what an editor holds. */
  steps: readonly (LayoutStep & Partial<Pick<WorkflowStep, 'signal' | 'for_each' | 'run_if'>>)[];
  /** The run's steps by key: each box gets its state's colour and its task count. */
  run?: ReadonlyMap<string, WorkflowRunStep>;
  /** A publish refusal's details.steps. */
  flagged?: readonly string[];
  selected?: string;
  onSelect?: (key: string) => void;
  label: string;
}

interface Placed {
  key: string;
  x: number;
  y: number;
}

/** Each layer is ordered by the mean position of its parents: fewer crossings than version order. */
function place(steps: GraphProps['steps']): { boxes: Placed[]; width: number; height: number } {
  const { layers: rows, unplaced } = layers(steps);
  if (unplaced.length) rows.push(unplaced);
  const after = new Map(steps.map((s) => [s.key, s.after ?? []]));
  const slot = new Map<string, number>();
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = widest * W + (widest - 1) * GX + 2 * PAD;
  const boxes: Placed[] = [];
  rows.forEach((row, depth) => {
    const centre = (k: string) => {
      const xs = (after.get(k) ?? []).map((p) => slot.get(p)).filter((x): x is number => x !== undefined);
      return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
    };
    const ordered =
      depth === 0
        ? row
        : row
            .map((k, i) => ({ k, i, c: centre(k) }))
            .sort((a, b) => a.c - b.c || a.i - b.i)
            .map((e) => e.k);
    const left = (width - (ordered.length * W + (ordered.length - 1) * GX)) / 2;
    ordered.forEach((key, i) => {
      const x = left + i * (W + GX);
      slot.set(key, x + W / 2);
      boxes.push({ key, x, y: PAD + depth * (H + GY) });
    });
  });
  return { boxes, width, height: rows.length * (H + GY) - GY + 2 * PAD };
}

function fit(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function detail(step: GraphProps['steps'][number], r: WorkflowRunStep | undefined): string {
  const kind = step.signal ? `signal ${step.signal.name}` : step.for_each ? `for each of ${step.for_each}` : 'task';
  if (!r) return kind;
  const n = r.task_ids.length;
  return step.signal ? r.state : `${r.state}${n ? ` · ${n} task${n === 1 ? '' : 's'}` : ''}`;
}

export function WorkflowGraph(p: GraphProps) {
  const { boxes, width, height } = place(p.steps);
  const at = new Map(boxes.map((b) => [b.key, b]));
  const flagged = new Set(p.flagged ?? []);
  const byKey = new Map(p.steps.map((s) => [s.key, s]));
  return (
    <figure class="wf-graph" data-graph>
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={p.label}>
        <title>{p.label}</title>
        {p.steps.flatMap((s) =>
          (s.after ?? []).map((parent) => {
            const a = at.get(parent);
            const b = at.get(s.key);
            if (!a || !b || a === b) return null;
            const x1 = a.x + W / 2;
            const y1 = a.y + H;
            const x2 = b.x + W / 2;
            const y2 = b.y;
            const bend = Math.max(GY / 2, (y2 - y1) / 2);
            const cond = byKey.get(s.key)?.run_if;
            return (
              <path
                key={`${parent}->${s.key}`}
                class={`wf-edge${cond && cond !== 'all_succeeded' ? ` wf-edge-${cond}` : ''}`}
                d={`M${x1} ${y1} C${x1} ${y1 + bend} ${x2} ${y2 - bend} ${x2} ${y2 - 2} M${x2 - 4} ${y2 - 8} L${x2} ${y2 - 2} L${x2 + 4} ${y2 - 8}`}
                data-edge={`${parent}->${s.key}`}
              />
            );
          }),
        )}
        {boxes.map((b) => {
          const step = byKey.get(b.key)!;
          const r = p.run?.get(b.key);
          const state = r?.state ?? 'none';
          const cls = `wf-node st-${state.toLowerCase()}${flagged.has(b.key) ? ' flagged' : ''}${p.selected === b.key ? ' selected' : ''}`;
          return (
            <g
              key={b.key}
              class={cls}
              data-step={b.key}
              data-state={r?.state}
              tabIndex={p.onSelect ? 0 : undefined}
              role={p.onSelect ? 'button' : undefined}
              onClick={p.onSelect ? () => p.onSelect!(b.key) : undefined}
              onKeyDown={p.onSelect ? (e) => (e.key === 'Enter' || e.key === ' ') && p.onSelect!(b.key) : undefined}
            >
              <title>{`${b.key}${r ? ` — ${r.state}` : ''}`}</title>
              <rect x={b.x} y={b.y} width={W} height={H} rx={7} />
              <text x={b.x + 10} y={b.y + 20} class="wf-key">
                {fit(b.key, 19)}
              </text>
              <text x={b.x + 10} y={b.y + 38} class="wf-sub">
                {fit(detail(step, r), 24)}
              </text>
            </g>
          );
        })}
      </svg>
      {p.run && (
        <figcaption class="wf-legend">
          {LEGEND.map((s) => (
            <span key={s} class={`wf-swatch st-${s.toLowerCase()}`}>
              {s}
            </span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}
