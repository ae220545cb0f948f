// The page: its controls, the URL that holds their state, and the worker that computes. Every
// control is a native input with a label, so the keyboard and screen readers work as usual.
import { formatValue } from '../sim/plot.js';
import type {
  Answer,
  CheckView,
  HerdView,
  MapView,
  PageSection,
  Progress,
  StormView,
} from './compute.js';
import { type Ask, Runner } from './runner.js';
import {
  type ChoiceField,
  checkHerd,
  checkMap,
  checkNumberField,
  checkStorm,
  FIELDS,
  type FlagField,
  fieldsOf,
  type HerdParams,
  herdCommand,
  type ListField,
  type MapParams,
  mapArgs,
  type NumberField,
  nearestStop,
  type PageState,
  readHash,
  type StormParams,
  stormArgs,
  VIEWS,
  type View,
  writeHash,
} from './state.js';

/** The views with controls, whose inputs live in the state under the view's name. */
type FormView = 'herd' | 'storm' | 'map';

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

type Status = 'computing' | 'done' | 'invalid' | 'error' | 'stopped';

/** Marks a view's computing state, for people (the status line) and for tests (`data-state`). */
function setStatus(view: View, status: Status, text: string) {
  element(view).dataset.state = status;
  element(`${view}-status`).textContent = text;
  if (view === 'storm' || view === 'map') {
    element(`${view}-stop`).setAttribute('aria-disabled', String(status !== 'computing'));
    if (status !== 'computing') element<HTMLProgressElement>(`${view}-progress`).value = 0;
  }
}

const MINUTE = 60_000;

/** A duration for people, as the CLI's check prints it: ms below 10 minutes, then min, h, days. */
function duration(ms: number | null): string {
  if (ms === null) return 'unbounded';
  const abs = Math.abs(ms);
  if (abs < 10 * MINUTE) return `${formatValue(ms)} ms`;
  if (abs < 120 * MINUTE) return `${formatValue(ms / MINUTE)} min`;
  if (abs < 48 * 60 * MINUTE) return `${formatValue(ms / (60 * MINUTE))} h`;
  return `${formatValue(ms / (24 * 60 * MINUTE))} days`;
}

function cells(row: HTMLTableRowElement, values: readonly string[]): void {
  for (const value of values) row.insertCell().textContent = value;
}

const computed = (ms: number) => `Computed in ${formatValue(Math.max(1, Math.round(ms)))} ms.`;

// --- the state and the URL --------------------------------------------------------------------

let state: PageState = readHash(location.hash);
const runner = new Runner({ answer: show, progress: showProgress });

function saveState(next: PageState): void {
  state = next;
  const hash = writeHash(state);
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

// --- controls -----------------------------------------------------------------------------------

type Field = ChoiceField | FlagField | NumberField | ListField;

function errorLine(id: string): HTMLParagraphElement {
  const error = document.createElement('p');
  error.id = `${id}-error`;
  error.className = 'error';
  return error;
}

function labelFor(id: string, text: string): HTMLLabelElement {
  const label = document.createElement('label');
  label.htmlFor = id;
  label.id = `${id}-label`;
  label.textContent = text;
  return label;
}

/** One control of a view: its label, its input (and a slider for a number), its error line. */
function control(view: FormView, form: HTMLElement, field: Field): void {
  const id = `${view}-${field.flag}`;
  const change = (text: string) => changeInput(view, field, text);
  form.append(labelFor(id, field.label));
  if ('values' in field) {
    const select = document.createElement('select');
    select.id = id;
    select.className = 'wide';
    for (const value of field.values) select.add(new Option(value, value));
    select.addEventListener('change', () => change(select.value));
    form.append(select);
  } else if (!('default' in field)) {
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.id = id;
    box.className = 'wide';
    box.addEventListener('change', () => change(box.checked ? 'on' : 'off'));
    form.append(box);
  } else if (!('stops' in field)) {
    const input = document.createElement('input');
    input.type = 'text';
    input.id = id;
    input.className = 'wide';
    input.spellcheck = false;
    input.addEventListener('input', () => change(input.value));
    form.append(input);
  } else {
    if (field.stops.length > 0) {
      const slider = document.createElement('input');
      slider.type = 'range';
      slider.id = `${id}-slider`;
      slider.min = '0';
      slider.max = String(field.stops.length - 1);
      slider.step = '1';
      slider.setAttribute('aria-label', `${field.label} (slider)`);
      slider.addEventListener('input', () => {
        const value = String(field.stops[Number(slider.value)]!);
        element<HTMLInputElement>(id).value = value;
        change(value);
      });
      form.append(slider);
    } else {
      form.append(document.createElement('span'));
    }
    const input = document.createElement('input');
    input.type = 'number';
    input.id = id;
    input.min = String(field.min);
    input.max = String(field.max);
    input.step = field.integer ? '1' : 'any';
    input.addEventListener('input', () => change(input.value));
    form.append(input);
  }
  element(id).setAttribute('aria-describedby', `${id}-error`);
  form.append(errorLine(id));
}

/** Puts a number's slider at the stop nearest its value. */
function placeSlider(view: FormView, field: NumberField, text: string): void {
  if (field.stops.length === 0) return;
  const checked = checkNumberField(field, text);
  const slider = element<HTMLInputElement>(`${view}-${field.flag}-slider`);
  if ('value' in checked) slider.value = String(nearestStop(field.stops, checked.value));
  slider.setAttribute('aria-valuetext', text);
}

/** Puts the state's inputs of a view into its controls (on load, and when the URL changes). */
function fillControls(view: FormView): void {
  const inputs = state[view] as Readonly<Record<string, string>>;
  for (const field of fieldsOf(view)) {
    const text = inputs[field.key]!;
    const input = element<HTMLInputElement>(`${view}-${field.flag}`);
    if (input.type === 'checkbox') input.checked = text === 'on';
    else input.value = text;
    if ('stops' in field) placeSlider(view, field, text);
  }
}

function changeInput(view: FormView, field: Field, text: string): void {
  saveState({ ...state, [view]: { ...state[view], [field.key]: text } });
  if ('stops' in field) placeSlider(view, field, text);
  run(view);
}

/** Marks each wrong input of a view and says why; returns the parameters if all are right. */
function paramsOrMarks<P>(
  view: FormView,
  result: { params: P } | { errors: Readonly<Record<string, string>> },
): P | undefined {
  const errors = 'errors' in result ? result.errors : {};
  for (const field of fieldsOf(view)) {
    const id = `${view}-${field.flag}`;
    const message = errors[field.key];
    element(id).setAttribute('aria-invalid', String(message !== undefined));
    element(`${id}-error`).textContent = message === undefined ? '' : `${field.label} ${message}.`;
  }
  if ('params' in result) return result.params;
  setStatus(view, 'invalid', 'Correct the marked values to see the figures.');
  return undefined;
}

/** The parameters of the last question asked of each view, for the command under its figures. */
let herdParams: HerdParams | undefined;
let stormParams: StormParams | undefined;
let mapParams: MapParams | undefined;
/** The name of the file whose map is on show (not in the link); undefined: the controls' map. */
let mapFile: string | undefined;

function ask(view: View, question: Ask): void {
  setStatus(view, 'computing', 'Computing…');
  if (view === 'storm') element('storm-live').replaceChildren();
  runner.ask(question);
}

/** Checks a view's inputs and, if they are right, asks the worker for its figures. */
function run(view: View): void {
  if (view === 'check') {
    ask('check', { kind: 'check', stack: state.stack });
  } else if (view === 'herd') {
    herdParams = paramsOrMarks('herd', checkHerd(state.herd));
    if (herdParams !== undefined) ask('herd', { kind: 'herd', params: herdParams });
  } else if (view === 'storm') {
    stormParams = paramsOrMarks('storm', checkStorm(state.storm));
    if (stormParams !== undefined) ask('storm', { kind: 'storm', params: stormParams });
  } else {
    mapFile = undefined;
    mapParams = paramsOrMarks('map', checkMap(state.map));
    if (mapParams !== undefined) ask('map', { kind: 'map', params: mapParams });
  }
}

function stop(view: 'storm' | 'map'): void {
  if (runner.running === undefined || viewOf(runner.running) !== view) return;
  const done = element<HTMLProgressElement>(`${view}-progress`).value;
  runner.stop();
  setStatus(
    view,
    'stopped',
    `Stopped at ${Math.floor(done * 100)}%. Change a value, or press Compute, to run it again.`,
  );
}

// --- what the worker answers --------------------------------------------------------------------

function viewOf(kind: Ask['kind']): View {
  return kind === 'map-file' ? 'map' : kind;
}

function showProgress(progress: Progress, kind: Ask['kind']): void {
  const view = viewOf(kind);
  if (view !== 'storm' && view !== 'map') return;
  element<HTMLProgressElement>(`${view}-progress`).value = progress.done;
  element(`${view}-status`).textContent = `Computing… ${Math.floor(progress.done * 100)}%`;
  // The storm's charts so far; a stopped run's stay until the next run starts.
  if (progress.live !== undefined) element('storm-live').innerHTML = progress.live;
}

function showHerd(view: HerdView, ms: number): void {
  element('herd-chart').innerHTML = view.svg;
  const body = element<HTMLTableElement>('herd-figures').tBodies[0]!;
  body.replaceChildren();
  for (const run of view.runs) {
    cells(body.insertRow(), [
      run.jitter,
      formatValue(run.figures.calls),
      formatValue(run.figures.busiestSlot),
      `${run.figures.doneAfterSeconds.toFixed(2)} s`,
    ]);
  }
  if (herdParams !== undefined) element('herd-command').textContent = herdCommand(herdParams);
  setStatus('herd', 'done', computed(ms));
}

/** A report's sections, in a view: heading, prose, the figures as a table, the charts. */
function showSections(into: HTMLElement, sections: readonly PageSection[]): void {
  into.replaceChildren();
  for (const s of sections) {
    const part = document.createElement('section');
    part.className = 'report-section';
    const heading = document.createElement('h3');
    heading.textContent = s.heading;
    part.append(heading);
    for (const text of s.text) {
      const p = document.createElement('p');
      p.textContent = text;
      part.append(p);
    }
    if (s.table !== null) {
      const table = document.createElement('table');
      table.className = 'figures';
      table.createCaption().textContent = `The figures: ${s.heading}`;
      const head = table.createTHead().insertRow();
      for (const h of s.table.head) {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = h;
        head.append(th);
      }
      const body = table.createTBody();
      for (const row of s.table.rows) cells(body.insertRow(), row);
      part.append(table);
    }
    if (s.svg !== null || s.figures.length > 0) {
      const chart = document.createElement('div');
      chart.className = 'chart';
      chart.innerHTML = (s.svg ?? '') + s.figures.join('');
      part.append(chart);
    }
    into.append(part);
  }
}

function showStorm(view: StormView, ms: number): void {
  element('storm-live').replaceChildren();
  const body = element<HTMLTableElement>('storm-figures').tBodies[0]!;
  body.replaceChildren();
  for (const [key, value] of Object.entries(view.figures[view.chosen]!)) {
    cells(body.insertRow(), [key, typeof value === 'string' ? value : JSON.stringify(value)]);
  }
  showSections(element('storm-report'), view.sections);
  if (stormParams !== undefined) {
    const args = stormArgs(stormParams).join(' ');
    element('storm-command').textContent = `stormproof ${args} --json`;
    element('storm-plot-command').textContent = `stormproof ${args} --plot storm.html`;
  }
  setStatus('storm', 'done', computed(ms));
}

/** The map's cells as text, one row each: what the heatmaps' squares show. */
function showMapCells(view: MapView): void {
  const body = element<HTMLTableElement>('map-cells').tBodies[0]!;
  body.replaceChildren();
  for (const c of view.result.cells) {
    cells(body.insertRow(), [
      c.policy,
      c.stormproofServer ? 'on' : 'off',
      c.triggerKind,
      String(c.load),
      `${c.triggerSeconds} s`,
      c.class,
      `${Math.round(c.probability.metastable * 100)}%`,
      c.recoverySeconds === null ? '-' : `${formatValue(c.recoverySeconds)} s`,
      formatValue(c.amplification),
    ]);
  }
}

function showMap(view: MapView, ms: number): void {
  const intro = element('map-intro');
  intro.replaceChildren();
  for (const text of view.intro) {
    const p = document.createElement('p');
    p.textContent = text;
    intro.append(p);
  }
  showSections(element('map-report'), view.sections);
  showMapCells(view);
  const g = view.result.grid;
  const runs = view.result.cells.length * g.seeds;
  if (mapFile === undefined) {
    element('map-source').textContent =
      `Computed in this page: ${formatValue(runs)} runs, ${g.seeds} seeds a cell.`;
    if (mapParams !== undefined) {
      element('map-command').textContent = `stormproof ${mapArgs(mapParams).join(' ')} --json`;
    }
  } else {
    element('map-source').textContent =
      `From the file ${mapFile}: ${g.policies.length} policies, ${formatValue(runs)} runs, ${g.seeds} seeds a cell. A file is not in the link: the link brings back the map the controls compute.`;
    element('map-command').textContent = '';
  }
  setStatus('map', 'done', computed(ms));
}

function showCheck(view: CheckView, ms: number): void {
  const textarea = element('check-stack');
  const error = element('check-error');
  const outputs = ['check-summary', 'check-chart', 'check-warnings', 'check-notes'].map((id) =>
    element(id),
  );
  const layers = element<HTMLTableElement>('check-layers').tBodies[0]!;
  if (!view.ok) {
    textarea.setAttribute('aria-invalid', 'true');
    error.textContent = `Cannot check it: ${view.error}`;
    for (const out of outputs) out.replaceChildren();
    layers.replaceChildren();
    setStatus('check', 'invalid', 'Correct the stack to see its worst case.');
    return;
  }
  textarea.setAttribute('aria-invalid', 'false');
  error.textContent = '';
  const r = view.json;
  element('check-summary').textContent =
    `${view.name ?? 'The stack'}: in the worst case one user request makes ${formatValue(r.worstCaseBottomCalls)} calls at the service and takes ${duration(r.worstCaseLatencyMs)}.`;
  element('check-chart').innerHTML = view.svg;
  layers.replaceChildren();
  for (const l of r.layers) {
    cells(layers.insertRow(), [
      l.name,
      formatValue(l.attempts),
      formatValue(l.worstCaseCallsReceived),
      duration(l.maxTotalBackoffMs),
      duration(l.worstCaseLatencyMs),
    ]);
  }
  for (const [id, items, none] of [
    ['check-warnings', r.warnings, 'No warnings.'],
    ['check-notes', r.notes, 'No notes.'],
  ] as const) {
    const list = element(id);
    list.replaceChildren();
    for (const text of items.length > 0 ? items : [none]) {
      const item = document.createElement('li');
      item.textContent = text;
      list.append(item);
    }
  }
  setStatus('check', 'done', computed(ms));
}

function show(answer: Answer, kind: Ask['kind']): void {
  if (answer.kind === 'herd') showHerd(answer.view, answer.ms);
  else if (answer.kind === 'storm') showStorm(answer.view, answer.ms);
  else if (answer.kind === 'map') showMap(answer.view, answer.ms);
  else if (answer.kind === 'check') showCheck(answer.view, answer.ms);
  else if (kind === 'map-file') {
    // A file that is not a map: said beside the file input; the map on show stays.
    element('map-file').setAttribute('aria-invalid', 'true');
    element('map-file-error').textContent =
      `Cannot draw ${mapFile ?? 'the file'}: ${answer.message}`;
    mapFile = undefined;
    setStatus('map', 'error', 'The file was not drawn.');
  } else {
    setStatus(viewOf(kind), 'error', `The simulator failed: ${answer.message}`);
    console.error(`stormproof: ${answer.message}`);
  }
}

// --- views ------------------------------------------------------------------------------------

function selectView(view: View): void {
  for (const v of VIEWS) {
    element(v).hidden = v !== view;
    const button = element(`show-${v}`);
    if (v === view) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
  }
  run(view);
}

/** Loads the state of the URL into every control and shows its view. */
function load(): void {
  state = readHash(location.hash);
  saveState(state);
  for (const view of Object.keys(FIELDS) as FormView[]) fillControls(view);
  element<HTMLTextAreaElement>('check-stack').value = state.stack;
  selectView(state.view);
}

for (const view of Object.keys(FIELDS) as FormView[]) {
  const form = element(`${view}-form`);
  for (const field of fieldsOf(view)) control(view, form, field);
  form.addEventListener('submit', (event) => event.preventDefault());
}
for (const view of ['storm', 'map'] as const) {
  element(`${view}-stop`).addEventListener('click', () => stop(view));
  element(`${view}-run`).addEventListener('click', () => run(view));
}
element<HTMLInputElement>('map-file').addEventListener('change', async (event) => {
  const input = event.target as HTMLInputElement;
  const file = input.files?.[0];
  if (file === undefined) return;
  input.setAttribute('aria-invalid', 'false');
  element('map-file-error').textContent = '';
  mapFile = file.name;
  setStatus('map', 'computing', `Reading ${file.name}…`);
  runner.ask({ kind: 'map-file', text: await file.text() });
});
element<HTMLTextAreaElement>('check-stack').addEventListener('input', (event) => {
  saveState({ ...state, stack: (event.target as HTMLTextAreaElement).value });
  run('check');
});
for (const view of VIEWS) {
  element(`show-${view}`).addEventListener('click', () => {
    saveState({ ...state, view });
    selectView(view);
  });
}
// A link pasted into this tab, or the back button: the URL is the state.
window.addEventListener('hashchange', load);
load();
