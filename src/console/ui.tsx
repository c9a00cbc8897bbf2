/**
 * What every view shares: the live region errors are announced in, lists paged with the API's
 * `limit` and `next_cursor`, and labelled fields.
 */
import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiResult, Windowed } from '../client/index.ts';
import { describeFailure, must } from './session.ts';

/** Announces a failure (or clears it with ''), in the page's live region. */
export type Report = (message: string) => void;
export const ReportContext = createContext<Report>(() => undefined);

export function useReport(): Report {
  return useContext(ReportContext);
}

/** One page as loaded: its rows and the cursor of the next one (none on the last page). */
export interface Page<T> {
  readonly rows: readonly T[];
  readonly next: string | undefined;
}

/** The page an API list answered; an error answer throws. */
export async function listed<T>(answer: Promise<ApiResult<T[]>>): Promise<Page<T>> {
  const res = await answer;
  return { rows: must(res), next: res.nextCursor };
}

/**
 * The value `load` resolves with, asked again whenever `query` changes (undefined: nothing asked);
 * a failure is announced and leaves the value undefined.
 */
export function useAnswer<T>(query: string | undefined, load: () => Promise<T>): { readonly value: T | undefined; readonly loading: boolean } {
  const report = useReport();
  // The value with the query it answers: a render between a new query and its effect must not
  // show the old query's answer as the new one's.
  const [answer, setAnswer] = useState<{ query: string; value: T } | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const loader = useRef(load);
  loader.current = load;
  useEffect(() => {
    let current = true;
    if (query === undefined) return;
    setLoading(true);
    loader
      .current()
      .then((value) => current && (setAnswer({ query, value }), report('')))
      .catch((err: unknown) => current && report(describeFailure(err)))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [query, report]);
  return { value: answer !== undefined && answer.query === query ? answer.value : undefined, loading };
}

/** One page of a list, and how to move between pages. */
export interface Pages<T> {
  readonly rows: readonly T[];
  /** 1 for the first page. */
  readonly number: number;
  readonly hasNext: boolean;
  readonly loading: boolean;
  next(): void;
  previous(): void;
}

/**
 * A list paged by the API: `load` asks for one page (the cursor of the page, none for the first)
 * and is called again from the first page whenever `query` changes; undefined loads nothing. The
 * cursors of the pages seen are kept, so Previous asks the API again instead of keeping rows.
 */
export function usePages<T>(query: string | undefined, load: (cursor: string | undefined) => Promise<Page<T>>): Pages<T> {
  const report = useReport();
  const [rows, setRows] = useState<readonly T[]>([]);
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([undefined]);
  const [nextCursor, setNextCursor] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const asked = useRef(0);
  // The latest `load`: it closes over the query, and a new query is what asks again.
  const loader = useRef(load);
  loader.current = load;
  const fetchPage = useCallback(
    (cursor: string | undefined, stack: ReadonlyArray<string | undefined>) => {
      const ticket = ++asked.current;
      setLoading(true);
      loader
        .current(cursor)
        .then((page) => {
          if (ticket !== asked.current) return;
          setRows(page.rows);
          setNextCursor(page.next);
          setCursors(stack);
          report('');
        })
        .catch((err: unknown) => ticket === asked.current && report(describeFailure(err)))
        .finally(() => ticket === asked.current && setLoading(false));
    },
    [report],
  );
  useEffect(() => {
    setRows([]);
    setNextCursor(undefined);
    if (query !== undefined) fetchPage(undefined, [undefined]);
  }, [query, fetchPage]);
  return {
    rows,
    number: cursors.length,
    hasNext: nextCursor !== undefined,
    loading,
    next: () => nextCursor !== undefined && fetchPage(nextCursor, [...cursors, nextCursor]),
    previous: () => cursors.length > 1 && fetchPage(cursors[cursors.length - 2], cursors.slice(0, -1)),
  };
}

/** Previous and next buttons of a list, and where it stands. */
export function Pager(props: {
  readonly label: string;
  readonly number: number;
  readonly hasNext: boolean;
  readonly loading?: boolean;
  previous(): void;
  next(): void;
}) {
  if (props.number <= 1 && !props.hasNext) return null;
  return (
    <div class="pager" role="group" aria-label={`Pages of ${props.label}`}>
      <button type="button" onClick={props.previous} disabled={props.number <= 1 || props.loading === true}>
        Previous page
      </button>
      <span>Page {props.number}</span>
      <button type="button" onClick={props.next} disabled={!props.hasNext || props.loading === true}>
        Next page
      </button>
    </div>
  );
}

/** A client-side page of rows already in memory (as-of, preview), `size` at a time. */
export function useLocalPages<T>(all: readonly T[], size: number): Pages<T> {
  const [number, setNumber] = useState(1);
  useEffect(() => setNumber(1), [all]);
  const pages = Math.max(1, Math.ceil(all.length / size));
  return {
    rows: all.slice((number - 1) * size, number * size),
    number,
    hasNext: number < pages,
    loading: false,
    next: () => setNumber((n) => Math.min(n + 1, pages)),
    previous: () => setNumber((n) => Math.max(n - 1, 1)),
  };
}

let fieldIds = 0;

/** A text field with its visible label: the label is its accessible name. */
export function Field(props: {
  readonly label: string;
  readonly value: string;
  readonly onInput: (value: string) => void;
  readonly inputMode?: 'numeric' | 'text';
  readonly hint?: string;
}) {
  const id = useRef(`field-${++fieldIds}`).current;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        type="text"
        value={props.value}
        autocomplete="off"
        spellcheck={false}
        inputMode={props.inputMode ?? 'text'}
        aria-describedby={props.hint === undefined ? undefined : `${id}-hint`}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
      {props.hint === undefined ? null : (
        <p id={`${id}-hint`} class="hint">
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** A time of the API (UTC, ISO 8601), as written, marked up as a time. */
export function Instant(props: { readonly value: string | undefined }) {
  if (props.value === undefined) return <span class="none">none</span>;
  return <time dateTime={props.value}>{props.value}</time>;
}

/** A section with its heading, for a list or an answer. */
export function Section(props: { readonly title: string; readonly children: ComponentChildren }) {
  return (
    <section aria-label={props.title}>
      <h3>{props.title}</h3>
      {props.children}
    </section>
  );
}

/** A table whose columns are named; `empty` is said instead of an empty table. */
export function Table(props: {
  readonly caption: string;
  readonly columns: readonly string[];
  readonly empty: string;
  readonly children: ComponentChildren[];
  readonly class?: string;
}) {
  if (props.children.length === 0) return <p class="empty">{props.empty}</p>;
  return (
    <table class={props.class}>
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th scope="col" key={c}>
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}

/** The paging options of one request: `limit`, and the cursor once past the first page. */
export function pageOf(limit: number, cursor: string | undefined): { limit: number; cursor?: string } {
  return cursor === undefined ? { limit } : { limit, cursor };
}

/** Edges (a role's permissions or members, a user's roles), each with its window. */
export function EdgeTable(props: {
  readonly caption: string;
  readonly head: string;
  readonly rows: ReadonlyArray<{ id: string } & Windowed>;
  readonly loading: boolean;
}) {
  return (
    <Table caption={props.caption} columns={[props.head, 'Not before', 'Expires at']} empty={props.loading ? 'Loading…' : 'None.'}>
      {props.rows.map((r) => (
        <tr key={r.id}>
          <td>{r.id}</td>
          <td>
            <Instant value={r.not_before} />
          </td>
          <td>
            <Instant value={r.expires_at} />
          </td>
        </tr>
      ))}
    </Table>
  );
}
