/**
 * The tool schemas' share of a request (issue 12 item A: `model.context_tokens` bounds the tool
 * schemas too). Pure: given the tools as listed and their budget (budget.ts `toolsMax`, 25 % of
 * the window), what is offered.
 *
 * 1. Everything fits: every tool as listed.
 * 2. Otherwise the tools are taken in the order listed (servers in config order, each server's
 *    own order), each one that still fits with its description at the floor; a tool whose schema
 *    does not fit is left out and cannot be called (the gateway refuses it). A later, smaller tool
 *    may still be offered after a large one was left out.
 * 3. The descriptions of the tools taken share what their schemas leave (water filling: short
 *    ones stay whole, long ones are cut to a common length with a marker).
 *
 * Only a tool's own description is shortened: the parameter schema is what the model's call must
 * satisfy, so it is sent whole or the tool is not offered.
 */
import type { ToolSpec } from "../models/types.ts";
import { BYTES_PER_TOKEN } from "./budget.ts";
import { cutText } from "./compact.ts";
import { bytesToTokens, textBytes, toolsTokens } from "./estimate.ts";
import { capsWithin, sum } from "./plan.ts";

/** Below this a description says too little to choose a tool by (encoded bytes, marker included). */
export const DESCRIPTION_FLOOR_BYTES = 200;
/** What one tool adds to toolsTokens' count besides its own JSON: framing and the comma. */
const PER_TOOL_BYTES = 48 + 1;
/** `,"description":` around the description's text. */
const DESCRIPTION_KEY_BYTES = 15;

export interface OmittedTool {
  name: string;
  /** The least the tool would take (its description at the floor). */
  tokens: number;
}

export interface ToolFit {
  /** What the request carries, in the order listed. */
  offered: ToolSpec[];
  /** The tools offered with a shortened description. */
  shortened: string[];
  /** The tools left out, in the order listed. */
  omitted: OmittedTool[];
  /** Tokens of the tools as listed, and of what is offered. */
  listedTokens: number;
  offeredTokens: number;
}

export function fitTools(specs: readonly ToolSpec[], maxTokens: number): ToolFit {
  const listedTokens = toolsTokens(specs);
  if (listedTokens <= maxTokens) return { offered: [...specs], shortened: [], omitted: [], listedTokens, offeredTokens: listedTokens };
  // toolsTokens counts the array's brackets once: one byte besides what each tool adds.
  const room = Math.max(0, maxTokens * BYTES_PER_TOKEN - 1);
  const sizes = specs.map(measure);
  const floorOf = (i: number) => sizes[i]!.bare + Math.min(sizes[i]!.description, DESCRIPTION_FLOOR_BYTES);

  const kept: number[] = [];
  const omitted: OmittedTool[] = [];
  let used = 0;
  specs.forEach((spec, i) => {
    if (used + floorOf(i) <= room) {
      kept.push(i);
      used += floorOf(i);
    } else omitted.push({ name: spec.name, tokens: bytesToTokens(floorOf(i)) });
  });

  const descriptionRoom = room - sum(kept.map((i) => sizes[i]!.bare));
  const caps = capsWithin(kept.map((i) => sizes[i]!.description), descriptionRoom);
  const shortened: string[] = [];
  const offered = kept.map((i, k) => {
    const spec = specs[i]!;
    const size = sizes[i]!.description;
    const cap = Math.max(caps[k]!, Math.min(size, DESCRIPTION_FLOOR_BYTES));
    if (cap >= size || spec.description === undefined) return spec;
    shortened.push(spec.name);
    const text = spec.description;
    return { ...spec, description: cutText(text, textBytes(text), cap - DESCRIPTION_KEY_BYTES) };
  });
  return { offered, shortened, omitted, listedTokens, offeredTokens: toolsTokens(offered) };
}

/** A tool's bytes as toolsTokens counts them: without its description, and the description's. */
function measure(spec: ToolSpec): { bare: number; description: number } {
  const { description, ...rest } = spec;
  const bare = Buffer.byteLength(JSON.stringify(rest), "utf8") + PER_TOOL_BYTES;
  return { bare, description: description === undefined ? 0 : DESCRIPTION_KEY_BYTES + textBytes(description) };
}
