// Links into the Temporal Web UI for what the operator CLIs print: one per workflow, and one per
// filter (the Workflows list with the query filled in), so an operator goes from a report to the
// history in one click. The base is TEMPORAL_UI_URL (npm start's dev server: http://127.0.0.1:8233).

export interface TemporalUi {
  /** The workflow's page (its latest run, or `runId`). */
  workflow(workflowId: string, runId?: string): string;
  /** The Workflows list filtered by a visibility query. */
  list(query: string): string;
}

export function temporalUi(baseUrl: string, namespace: string): TemporalUi {
  const base = `${baseUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows`;
  return {
    workflow: (workflowId, runId) =>
      `${base}/${encodeURIComponent(workflowId)}${runId ? `/${encodeURIComponent(runId)}/history` : ''}`,
    list: (query) => `${base}?query=${encodeURIComponent(query)}`,
  };
}
