// Runs the checks in workerd: a module worker whose fetch handler takes the URLs as query values.
import { runChecks } from './checks.mjs';

export default {
  async fetch(request) {
    const query = new URL(request.url).searchParams;
    const results = await runChecks({
      base: query.get('base'),
      refused: query.get('refused'),
      runtime: 'workerd',
    });
    return Response.json(results);
  },
};
