"""kgroup.sim"""
