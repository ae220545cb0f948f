// The page: its controls, the URL that holds their state, and the worker that computes. Every
// control is a native input with a label, so the keyboard and screen readers work as usual.
import { formatValue } from '../sim/plot.js';
import type { Answer, CheckView, HerdView, Question } from './compute.js';
import {
  type ChoiceField,
  checkHerd,
  checkNumberField,
  HERD_CHOICES,
  HERD_NUMBERS,
  type HerdParams,
  herdCommand,
  type NumberField,
  nearestStop,
  type PageState,
  readHash,
  VIEWS,
  type View,
  writeHash,
} from './state.js';
import ComputeWorker from './worker.ts?worker&inline';

/** A question without its id: the runner numbers them. */
type Ask = Question extends infer Q ? (Q extends Question ? Omit<Q, 'id'> : never) : never;

/**
 * The worker, asked one question at a time. A new question while one is running ends that run
 * (the models are synchronous loops that cannot be interrupted) and starts a fresh worker, so the
 * figures always follow the controls, however long a superseded run would have taken.
 */
class Runner {
  #worker: Worker | undefined;
  #pending: number | undefined;
  #lastId = 0;
  readonly #onAnswer: (answer: Answer) => void;

  constructor(onAnswer: (answer: Answer) => void) {
    this.#onAnswer = onAnswer;
  }

  ask(question: Ask): void {
    if (this.#pending !== undefined) {
      this.#worker?.terminate();
      this.#worker = undefined;
    }
    this.#worker ??= this.#start();
    const id = ++this.#lastId;
    this.#pending = id;
    this.#worker.postMessage({ ...question, id });
  }

  #start(): Worker {
    const worker = new ComputeWorker({ name: 'stormproof simulator' });
    worker.onmessage = (event: MessageEvent<Answer>) => {
      if (event.data.id !== this.#pending) return;
      this.#pending = undefined;
      this.#onAnswer(event.data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      const id = this.#pending;
      this.#pending = undefined;
      this.#worker = undefined;
      this.#onAnswer({ id: id ?? 0, kind: 'error', message: event.message || 'the worker failed' });
    };
    return worker;
  }
}

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

/** Marks a view's computing state, for people (the status line) and for tests (`data-state`). */
function setStatus(view: View, state: 'computing' | 'done' | 'invalid' | 'error', text: string) {
  element(view).dataset.state = state;
  element(`${view}-status`).textContent = text;
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

// --- the state and the URL --------------------------------------------------------------------

let state: PageState = readHash(location.hash);
const runner = new Runner(show);

function saveState(next: PageState): void {
  state = next;
  const hash = writeHash(state);
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

// --- the herd ---------------------------------------------------------------------------------

function numberControl(form: HTMLElement, field: NumberField): void {
  const id = `herd-${field.flag}`;
  const label = document.createElement('label');
  label.htmlFor = id;
  label.id = `${id}-label`;
  label.textContent = field.label;
  form.append(label);
  if (field.stops.length > 0) {
    const slider = document.createElement('input');
    slider.type = 'range';
    slider.id = `${id}-slider`;
    slider.min = '0';
    slider.max = String(field.stops.length - 1);
    slider.step = '1';
    slider.setAttribute('aria-label', `${field.label} (slider)`);
    slider.addEventListener('input', () => {
      const value = field.stops[Number(slider.value)]!;
      element<HTMLInputElement>(id).value = String(value);
      changeHerd(field.key, String(value));
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
  input.setAttribute('aria-describedby', `${id}-error`);
  input.addEventListener('input', () => changeHerd(field.key, input.value));
  form.append(input);
  const error = document.createElement('p');
  error.id = `${id}-error`;
  error.className = 'error';
  form.append(error);
}

function choiceControl(form: HTMLElement, field: ChoiceField): void {
  const id = `herd-${field.flag}`;
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = field.label;
  const select = document.createElement('select');
  select.id = id;
  select.className = 'wide';
  select.setAttribute('aria-describedby', `${id}-error`);
  for (const value of field.values) select.add(new Option(value, value));
  select.addEventListener('change', () => changeHerd(field.key, select.value));
  const error = document.createElement('p');
  error.id = `${id}-error`;
  error.className = 'error';
  form.append(label, select, error);
}

/** Puts the state's herd inputs into the controls (on load, and when the URL changes). */
function fillHerd(): void {
  for (const field of HERD_NUMBERS) {
    const text = state.herd[field.key];
    element<HTMLInputElement>(`herd-${field.flag}`).value = text;
    if (field.stops.length > 0) {
      const checked = checkNumberField(field, text);
      const slider = element<HTMLInputElement>(`herd-${field.flag}-slider`);
      slider.value = String(
        nearestStop(field.stops, 'value' in checked ? checked.value : field.default),
      );
      slider.setAttribute('aria-valuetext', text);
    }
  }
  for (const field of HERD_CHOICES) {
    element<HTMLSelectElement>(`herd-${field.flag}`).value = state.herd[field.key];
  }
}

function changeHerd(key: string, text: string): void {
  saveState({ ...state, herd: { ...state.herd, [key]: text } });
  const field = HERD_NUMBERS.find((f) => f.key === key);
  if (field !== undefined && field.stops.length > 0) {
    const checked = checkNumberField(field, text);
    const slider = element<HTMLInputElement>(`herd-${field.flag}-slider`);
    if ('value' in checked) slider.value = String(nearestStop(field.stops, checked.value));
    slider.setAttribute('aria-valuetext', text);
  }
  runHerd();
}

let herdParams: HerdParams | undefined;

function runHerd(): void {
  const checked = checkHerd(state.herd);
  const errors = 'errors' in checked ? checked.errors : {};
  for (const field of [...HERD_NUMBERS, ...HERD_CHOICES]) {
    const id = `herd-${field.flag}`;
    const message = errors[field.key];
    element(id).setAttribute('aria-invalid', String(message !== undefined));
    element(`${id}-error`).textContent = message === undefined ? '' : `${field.label} ${message}.`;
  }
  if ('errors' in checked) {
    setStatus('herd', 'invalid', 'Correct the marked values to see the figures.');
    return;
  }
  herdParams = checked.params;
  setStatus('herd', 'computing', 'Computing…');
  runner.ask({ kind: 'herd', params: checked.params });
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
  setStatus('herd', 'done', `Computed in ${Math.max(1, Math.round(ms))} ms.`);
}

// --- the check --------------------------------------------------------------------------------

function runCheck(): void {
  setStatus('check', 'computing', 'Computing…');
  runner.ask({ kind: 'check', stack: state.stack });
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
  setStatus('check', 'done', `Computed in ${Math.max(1, Math.round(ms))} ms.`);
}

// --- views ------------------------------------------------------------------------------------

function show(answer: Answer): void {
  if (answer.kind === 'herd') showHerd(answer.view, answer.ms);
  else if (answer.kind === 'check') showCheck(answer.view, answer.ms);
  else {
    setStatus(state.view, 'error', `The simulator failed: ${answer.message}`);
    console.error(`stormproof: ${answer.message}`);
  }
}

function selectView(view: View): void {
  for (const v of VIEWS) {
    element(v).hidden = v !== view;
    const button = element(`show-${v}`);
    if (v === view) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
  }
  if (view === 'herd') runHerd();
  else runCheck();
}

/** Loads the state of the URL into every control and shows its view. */
function load(): void {
  state = readHash(location.hash);
  saveState(state);
  fillHerd();
  element<HTMLTextAreaElement>('check-stack').value = state.stack;
  selectView(state.view);
}

const form = element('herd-form');
for (const field of HERD_NUMBERS) numberControl(form, field);
for (const field of HERD_CHOICES) choiceControl(form, field);
form.addEventListener('submit', (event) => event.preventDefault());
element<HTMLTextAreaElement>('check-stack').addEventListener('input', (event) => {
  saveState({ ...state, stack: (event.target as HTMLTextAreaElement).value });
  runCheck();
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
