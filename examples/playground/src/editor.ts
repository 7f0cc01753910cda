// The model editor: CodeMirror 6 with TypeScript highlighting, and compile diagnostics shown
// as lint marks at their line and column. Invariant: a diagnostic outside the text is clamped
// into it, so every diagnostic the compiler reports is visible.

import { EditorState } from '@codemirror/state';
import { EditorView, keymap, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching, indentOnInput } from '@codemirror/language';
import { lintGutter, setDiagnostics, type Diagnostic as CmDiagnostic } from '@codemirror/lint';
import type { Diagnostic } from './compile.js';

export interface ModelEditor {
  readonly view: EditorView;
  text(): string;
  setText(text: string): void;
  /** Shows `diags` (1-based line:col) as lint marks; [] clears them. */
  showDiagnostics(diags: readonly Diagnostic[]): void;
}

export function createEditor(parent: HTMLElement, text: string, onRun: () => void): ModelEditor {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(), history(), highlightActiveLine(), bracketMatching(), indentOnInput(), lintGutter(),
        syntaxHighlighting(defaultHighlightStyle), javascript({ typescript: true }),
        keymap.of([{ key: 'Mod-Enter', run: () => { onRun(); return true; } }, indentWithTab, ...defaultKeymap, ...historyKeymap]),
      ],
    }),
  });
  return {
    view,
    text: () => view.state.doc.toString(),
    setText(t) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } }); },
    showDiagnostics(diags) {
      const doc = view.state.doc;
      const marks: CmDiagnostic[] = diags.map((d) => {
        const line = doc.line(Math.min(Math.max(1, d.line), doc.lines));
        const from = Math.min(line.from + Math.max(0, d.col - 1), line.to);
        const to = Math.max(from, Math.min(line.to, view.state.wordAt(from)?.to ?? from + 1));
        return { from, to: to > from ? to : Math.min(from + 1, doc.length), severity: d.severity, message: `${d.line}:${d.col}: ${d.message}` };
      });
      view.dispatch(setDiagnostics(view.state, marks));
    },
  };
}
