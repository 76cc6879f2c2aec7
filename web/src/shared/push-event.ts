/** A MESSAGE frame of /push (Spec: Push WebSocket 3): what changed on a channel (an entity uid). */
export interface PushEvent {
  channel: string;
  /** The entity type name: folder, message, … */
  type: string;
  action: 'create' | 'update' | 'delete' | string;
  data: Record<string, unknown>;
}
