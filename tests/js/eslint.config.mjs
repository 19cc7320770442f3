// The rules for the book's browser scripts (`make lint`): eslint's
// recommended set, with the globals of the place each script runs in.
// Paths are from the repository's top, where `make lint` runs eslint.
import js from "@eslint/js";
import globals from "globals";

export default [
  {
    files: ["book/mhabook/views/*.js", "book/_static/*.js", "book/_ext/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: {...globals.browser},
    },
  },
  {
    // The live lab's model runs in a module worker, not in the page.
    files: ["book/mhabook/views/live-worker.js"],
    languageOptions: {
      sourceType: "module",
      globals: {...globals.worker},
    },
  },
  {
    // Python's explorer.py replaces this placeholder with the view's JSON.
    files: ["book/mhabook/views/explorer.js"],
    languageOptions: {globals: {EXPLORER_PARAMS: "readonly"}},
  },
  {
    // Each defines one function, which bertviz_view.py pastes into the
    // page with the script that calls it (mhaCutFilters, mhaHeadPresets).
    files: [
      "book/mhabook/views/bertviz_filters.js",
      "book/mhabook/views/head_presets.js",
    ],
    rules: {"no-unused-vars": ["error", {varsIgnorePattern: "^mha[A-Z]"}]},
  },
  {
    // Loaded after require.js, whose global it configures.
    files: ["book/_ext/require-paths.js"],
    languageOptions: {globals: {require: "readonly"}},
  },
];
