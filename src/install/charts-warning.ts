/** The warning for the deprecated `--charts` flag; a module of its own so the CLI can use it without loading the installer. */
export const CHARTS_DEPRECATED = 'warning: --charts is deprecated and will be removed; use --manifests (-d)';
