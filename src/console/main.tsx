/** The console's entry: renders the app into the page served at /console (docs/console.md). */
import { render } from 'preact';
import { App } from './app.tsx';

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
