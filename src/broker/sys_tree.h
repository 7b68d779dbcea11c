/* sys_tree.h - the $SYS/broker/... topics: the broker's own figures,
 * published as retained messages every sys_interval seconds under the
 * names Mosquitto uses.
 */
#ifndef SHOOTOUT_SYS_TREE_H
#define SHOOTOUT_SYS_TREE_H

struct broker;

void sys_tree_publish(struct broker *b);

#endif
