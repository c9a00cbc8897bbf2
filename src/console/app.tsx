/**
 * The console's frame: the key form, the views' navigation, the view of the URL fragment and the
 * live region that announces failures. The key goes from the field to the session and the field
 * is emptied: from then on it is only in session.ts's memory.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, closeSession, describeFailure, must, openSession } from './session.ts';
import { ReportContext } from './ui.tsx';
import { VIEWS, viewOf, type ViewId } from './views.ts';
import { RolesView } from './views/roles.tsx';
import { UserView } from './views/user.tsx';
import { WhoCanView } from './views/who-can.tsx';
import { WindowsView } from './views/windows.tsx';
import { ChangesView } from './views/changes.tsx';
import { AsOfView } from './views/as-of.tsx';
import { PreviewView } from './views/preview.tsx';

export function App() {
  const [view, setView] = useState<ViewId>(viewOf(location.hash));
  const [opened, setOpened] = useState<number | undefined>(undefined);
  const [message, setMessage] = useState('');
  const report = useCallback((m: string) => setMessage(m), []);
  useEffect(() => {
    const follow = (): void => setView(viewOf(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return (
    <ReportContext.Provider value={report}>
      <header>
        <h1>rbac-gateway console</h1>
        <KeyForm opened={opened !== undefined} onOpened={setOpened} report={report} />
      </header>
      <nav aria-label="Views">
        <ul>
          {VIEWS.map((v) => (
            <li key={v.id}>
              <a href={`#${v.id}`} aria-current={v.id === view ? 'page' : undefined}>
                {v.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="alert" role="alert" aria-live="assertive">
        {message}
      </div>
      <main>{opened === undefined ? <Closed /> : <View id={view} key={view} />}</main>
    </ReportContext.Provider>
  );
}

function Closed() {
  return (
    <section aria-labelledby="closed-title">
      <h2 id="closed-title">No client open</h2>
      <p>
        Enter a client key or a token in <strong>Client key</strong> and press Enter. It stays in this page's memory only: it is sent as the Authorization
        header of the API calls, and a reload forgets it. The console reads; it writes nothing.
      </p>
    </section>
  );
}

/** The view of the fragment, its heading focused when it opens so that a screen reader starts there. */
function View(props: { readonly id: ViewId }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const title = VIEWS.find((v) => v.id === props.id)?.title ?? '';
  const body = {
    roles: <RolesView />,
    user: <UserView />,
    'who-can': <WhoCanView />,
    windows: <WindowsView />,
    changes: <ChangesView />,
    'as-of': <AsOfView />,
    preview: <PreviewView />,
  }[props.id];
  // A plain container: named after the view, it would share its name with the view's own field
  // (`User`), and a field's name must find that field alone.
  return (
    <div class="view">
      <h2 id="view-title" tabIndex={-1} ref={heading}>
        {title}
      </h2>
      {body}
    </div>
  );
}

/**
 * `Client key` and `Open`. The key is checked with one read (a refused key is said so and
 * forgotten); the field is emptied either way. The field has no `name` and is no password field,
 * so no form submission and no password manager ever takes it.
 */
function KeyForm(props: { readonly opened: boolean; onOpened(revision: number | undefined): void; readonly report: (m: string) => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const open = (e: Event): void => {
    e.preventDefault();
    const typed = key.trim();
    setKey('');
    if (typed === '') return props.report('Enter a client key or a token first.');
    setBusy(true);
    openSession(typed);
    api()
      .listRoles({ limit: 1 })
      .then((res) => {
        must(res);
        props.report('');
        props.onOpened(res.revision ?? 0);
      })
      .catch((err: unknown) => {
        closeSession();
        props.onOpened(undefined);
        props.report(describeFailure(err));
      })
      .finally(() => setBusy(false));
  };
  const forget = (): void => {
    closeSession();
    props.onOpened(undefined);
  };
  return (
    <form class="key" onSubmit={open}>
      <label for="client-key">Client key</label>
      <input
        id="client-key"
        type="text"
        class="secret"
        value={key}
        autocomplete="off"
        spellcheck={false}
        autocapitalize="off"
        onInput={(e) => setKey(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Open
      </button>
      {props.opened ? (
        <button type="button" onClick={forget}>
          Forget key
        </button>
      ) : null}
      <p class="state" aria-live="polite">
        {props.opened ? 'A client is open.' : 'No client open.'}
      </p>
    </form>
  );
}
