// The pool thread's task on PostgreSQL: pg only.
import { PostgresStore } from '../../store/postgres/index.ts';
import { storeTask } from './store-task.ts';

export default storeTask((settings) => {
  if (settings.postgresql === undefined) throw new Error('AUTH_POSTGRESQL_URL is required when AUTH_DATABASE_TYPE=postgresql');
  return new PostgresStore(settings.postgresql);
});
