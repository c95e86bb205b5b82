/**
 * The `mcp_events_*` commands as the events client answers them (serve.md §4, §6 item 7), and the
 * `response` it answers with. Serve parses and validates the commands at its boundary
 * (serve/protocol/commands.ts) and hands the parsed values over; these are the shapes the events
 * client relies on, so it does not depend on serve's parser.
 *
 * A response has serve's `response` frame shape and key order (type, id, command, success,
 * data | error): the session stores and sends it as it is (after stamping `id` and `command`).
 */
import type { EventAction, EventDelivery } from "./types.ts";

/** A client-chosen command id (a string or a finite number). */
export type EventsCommandId = string | number;

export interface EventsListCommand {
  type: "mcp_events_list";
  id: EventsCommandId;
  server?: string | undefined;
}

export interface EventsSubscribeCommand {
  type: "mcp_events_subscribe";
  id: EventsCommandId;
  server: string;
  name: string;
  arguments?: Record<string, unknown> | undefined;
  /** Absent: negotiated (webhook > push > poll). */
  delivery?: EventDelivery | undefined;
  action?: EventAction | undefined;
  instructions?: string | undefined;
  max_age_ms?: number | undefined;
}

export interface EventsUnsubscribeCommand {
  type: "mcp_events_unsubscribe";
  id: EventsCommandId;
  server: string;
  name: string;
  arguments?: Record<string, unknown> | undefined;
}

export type EventsCommand = EventsListCommand | EventsSubscribeCommand | EventsUnsubscribeCommand;
export type EventsCommandName = EventsCommand["type"];

/** The error codes the events client answers with. */
/** invalid_params: the request itself cannot be served (nothing was started or stored). */
export type EventsErrorCode = "refused" | "invalid_params" | "internal";

export interface EventsResponseOk<D = unknown> {
  type: "response";
  id: EventsCommandId;
  command: EventsCommandName;
  success: true;
  data: D;
}

export interface EventsResponseError {
  type: "response";
  id: EventsCommandId;
  command: EventsCommandName;
  success: false;
  error: { code: EventsErrorCode; message: string };
}

export type EventsResponse<D = unknown> = EventsResponseOk<D> | EventsResponseError;

/** Answers the `mcp_events_*` commands; the session stores and broadcasts the response. */
export type EventsCommandHandler = (command: EventsCommand) => EventsResponse | Promise<EventsResponse>;

export function eventsOk<D>(command: EventsCommand, data: D): EventsResponseOk<D> {
  return { type: "response", id: command.id, command: command.type, success: true, data };
}

export function eventsError(command: EventsCommand, code: EventsErrorCode, message: string): EventsResponseError {
  return { type: "response", id: command.id, command: command.type, success: false, error: { code, message } };
}
