/* passwd_cmd.h - `shootout passwd`: adds, updates and deletes users in a
 * password file, like Mosquitto's mosquitto_passwd. */
#ifndef SHOOTOUT_PASSWD_CMD_H
#define SHOOTOUT_PASSWD_CMD_H

/* argv[0] is "passwd". Returns the exit code: 0 done, 1 failure (file or
 * terminal trouble), 2 usage error. */
int passwd_main(int argc, char **argv);

#endif
