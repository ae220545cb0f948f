// Vite's worker import: the worker bundled and inlined into the page's one script, so starting a
// fresh worker (after a superseded run) needs no network and the page works offline once loaded.
declare module '*?worker&inline' {
  const WorkerFactory: new (options?: { name?: string }) => Worker;
  export default WorkerFactory;
}
