/** Types of eslint/layers.mjs, for the tests that read the table. */
import type { Linter } from 'eslint';

export declare const REPO_ROOT: string;
export declare const LAYERS: ReadonlyArray<ReadonlyArray<string>>;
export interface LayerException {
  /** A folder under src/ (`install`) or a file (`config/gateway-api/status.ts`). */
  readonly from: string;
  /** A folder under src/. */
  readonly to: string;
  readonly why: string;
}
export declare const EXCEPTIONS: ReadonlyArray<LayerException>;
export interface LayerSeam {
  /** A folder under src/. */
  readonly from: string;
  /** A lower folder under src/ that `from` may reach through `only`. */
  readonly to: string;
  /** Files of src/<to>/ that `from` may import. */
  readonly only: ReadonlyArray<string>;
  readonly why: string;
}
export declare const SEAMS: ReadonlyArray<LayerSeam>;
export declare function layerOf(folder: string): number | undefined;
export declare function forbiddenFor(folder: string): string[];
export declare function exceptionConfigs(exceptions?: ReadonlyArray<LayerException>): Linter.Config[];
export declare function layerConfigs(): Linter.Config[];
