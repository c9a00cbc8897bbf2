/**
 * #preview: writes typed in or pasted into `Writes` as NDJSON (one write of docs/api.md §12.2 per
 * line), judged by POST /api/dry-run, which stores nothing: each item valid or invalid with the
 * API's error, and the (user, permission) pairs that would be gained and lost.
 */
import { useState } from 'preact/hooks';
import type { CheckItem, Preview } from '../../client/index.ts';
import { api, describeFailure, must } from '../session.ts';
import { Pager, Section, Table, useLocalPages, useReport } from '../ui.tsx';

const PAIRS_PER_PAGE = 500;
const ITEMS_PER_PAGE = 500;

/** The lines of `Writes`: each a JSON object, or why not. */
type Line = { readonly text: string; readonly write: unknown } | { readonly text: string; readonly unreadable: string };

function linesOf(text: string): Line[] {
  return text
    .split('\n')
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((t) => {
      try {
        const write: unknown = JSON.parse(t);
        return typeof write === 'object' && write !== null && !Array.isArray(write) ? { text: t, write } : { text: t, unreadable: 'not a JSON object' };
      } catch (err) {
        return { text: t, unreadable: `not JSON (${err instanceof Error ? err.message : String(err)})` };
      }
    });
}

export function PreviewView() {
  const report = useReport();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [judged, setJudged] = useState<{ lines: Line[]; preview: Preview | undefined } | undefined>(undefined);
  const preview = (): void => {
    const lines = linesOf(text);
    if (lines.length === 0) return report('Type or paste writes first, one JSON object per line.');
    if (lines.some((l) => 'unreadable' in l)) return setJudged({ lines, preview: undefined });
    setBusy(true);
    api()
      .request<Preview>('POST', '/api/dry-run', { body: { writes: lines.map((l) => ('write' in l ? l.write : null)) } })
      .then((res) => {
        setJudged({ lines, preview: must(res) });
        report('');
      })
      .catch((err: unknown) => report(describeFailure(err)))
      .finally(() => setBusy(false));
  };
  return (
    <>
      <div class="field">
        <label for="writes">Writes</label>
        <textarea id="writes" rows={8} spellcheck={false} value={text} aria-describedby="writes-hint" onInput={(e) => setText(e.currentTarget.value)} />
        <p id="writes-hint" class="hint">
          One write per line, as POST /api/writes takes them: {'{"op":"membership.add","user":"alice","role":"admin"}'}. Nothing is stored.
        </p>
      </div>
      <button type="button" onClick={preview} disabled={busy}>
        Preview
      </button>
      {judged === undefined ? null : <Judged {...judged} />}
    </>
  );
}

function Judged(props: { readonly lines: readonly Line[]; readonly preview: Preview | undefined }) {
  const p = props.preview;
  const items = props.lines.map((line, i) => ({ line, i, verdict: verdictOf(line, p?.results[i]) }));
  const shown = useLocalPages(items, ITEMS_PER_PAGE);
  return (
    <div class="detail">
      <p class="verdict">
        {p === undefined
          ? 'Some lines are not writes: nothing was sent.'
          : p.valid
            ? `Valid at revision ${p.revision}: /api/writes would apply all ${props.lines.length}.`
            : `Invalid at revision ${p.revision}: /api/writes would refuse the batch and store nothing.`}
      </p>
      <Section title="Each write">
        <Table class="writes" caption="Each write and its verdict" columns={['#', 'Write', 'Verdict']} empty="No write.">
          {shown.rows.map(({ line, i, verdict }) => (
            <tr key={i} class={verdict.ok ? 'valid' : 'invalid'}>
              <td>{i + 1}</td>
              <td>
                <code>{line.text}</code>
              </td>
              <td>{verdict.text}</td>
            </tr>
          ))}
        </Table>
        <Pager label="writes" {...shown} />
      </Section>
      {p === undefined ? null : (
        <>
          <Pairs title="gained" pairs={p.gained} count={p.gained_count} truncated={p.truncated} />
          <Pairs title="lost" pairs={p.lost} count={p.lost_count} truncated={p.truncated} />
        </>
      )}
    </div>
  );
}

function verdictOf(line: Line, result: { status: number; error?: string } | undefined): { ok: boolean; text: string } {
  if ('unreadable' in line) return { ok: false, text: `invalid: ${line.unreadable}` };
  if (result === undefined) return { ok: false, text: 'not judged' };
  if (result.status === 424) return { ok: false, text: 'not judged (424): an earlier write fails' };
  if (result.status < 300) return { ok: true, text: `valid (${result.status})` };
  return { ok: false, text: `invalid (${result.status}): ${result.error ?? ''}` };
}

function Pairs(props: { readonly title: string; readonly pairs: readonly CheckItem[]; readonly count: number; readonly truncated: boolean }) {
  const pages = useLocalPages(props.pairs, PAIRS_PER_PAGE);
  const more = props.count > props.pairs.length ? ` (the first ${props.pairs.length} of ${props.count} listed)` : '';
  return (
    <Section title={props.title}>
      <p>
        {props.count} (user, permission) pairs {props.title}
        {props.truncated ? more : ''}.
      </p>
      <Table caption={`Pairs ${props.title}, page ${pages.number}`} columns={['User', 'Permission']} empty={`No pair ${props.title}.`}>
        {pages.rows.map((c) => (
          <tr key={`${c.user}\u0000${c.permission}`}>
            <td>{c.user}</td>
            <td>{c.permission}</td>
          </tr>
        ))}
      </Table>
      <Pager label={`pairs ${props.title}`} {...pages} />
    </Section>
  );
}
